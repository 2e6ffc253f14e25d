// Package objectmeta writes the metadata of the virtual resources (TokenCredentialRequest,
// WhoAmIRequest) as upstream Pinniped has since v0.43: without a creationTimestamp key when it is
// zero. Upstream gets that from the Kubernetes 1.35 libraries (omitzero); the apimachinery this
// module uses still writes "creationTimestamp":null, so the types marshal their metadata here until
// the libraries are bumped.
package objectmeta

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JSON is meta in JSON, without creationTimestamp when it is zero.
func JSON(meta metav1.ObjectMeta) (json.RawMessage, error) {
	b, err := json.Marshal(meta)
	if err != nil || !meta.CreationTimestamp.IsZero() {
		return b, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	delete(fields, "creationTimestamp")
	return json.Marshal(fields)
}
