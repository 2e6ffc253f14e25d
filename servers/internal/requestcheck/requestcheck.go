// Package requestcheck refuses, with upstream Pinniped's exact errors, the request options that the
// servers' virtual resources (the Concierge's TokenCredentialRequest and WhoAmIRequest, the
// Supervisor's OIDCClientSecretRequest: nothing is stored) cannot honour. Clients and checks written
// for Pinniped compare these texts, so they are kept verbatim.
package requestcheck

import (
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DryRun refuses a dryRun request for the object name of kind as a 422 Invalid on the field dryRun.
// Upstream leaves the Kind out for the Concierge's resources (the message starts ".<group>") and
// names it for OIDCClientSecretRequest.
func DryRun(kind schema.GroupKind, name string, dryRun []string) error {
	if len(dryRun) == 0 {
		return nil
	}
	return apierrors.NewInvalid(kind, name,
		field.ErrorList{field.NotSupported[string](field.NewPath("dryRun"), jsonList(dryRun), nil)})
}

// Namespace refuses a request for the cluster-scoped kind made in namespace ns as a 400 Bad Request.
func Namespace(kind, ns string) error {
	if ns == "" {
		return nil
	}
	return apierrors.NewBadRequest(fmt.Sprintf("namespace is not allowed on %s: %s", kind, ns))
}

// jsonList prints as JSON (["All"]), as the Kubernetes 1.35+ libraries upstream builds with print a
// list in a field error; the libraries here would print Go syntax ([]string{"All"}).
type jsonList []string

func (l jsonList) String() string {
	b, _ := json.Marshal([]string(l)) // a []string always marshals
	return string(b)
}
