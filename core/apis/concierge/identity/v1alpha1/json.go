package v1alpha1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sealion.dev/core/apis/internal/objectmeta"
)

// MarshalJSON writes the request as upstream does, with no creationTimestamp in its metadata when
// it is zero (see package objectmeta). Its fields and their order are those of the struct.
func (r WhoAmIRequest) MarshalJSON() ([]byte, error) {
	meta, err := objectmeta.JSON(r.ObjectMeta)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        json.RawMessage     `json:"metadata,omitempty"`
		Spec            WhoAmIRequestSpec   `json:"spec,omitempty"`
		Status          WhoAmIRequestStatus `json:"status,omitempty"`
	}{r.TypeMeta, meta, r.Spec, r.Status})
}
