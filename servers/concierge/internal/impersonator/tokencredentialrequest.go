package impersonator

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	"sealion.dev/servers/concierge/internal/authncache"
	"sealion.dev/servers/concierge/internal/credential"
	"sealion.dev/servers/internal/requestcheck"
)

// Exchanger turns a token into a client certificate; credential.Exchanger is one.
type Exchanger interface {
	Exchange(ctx context.Context, key authncache.Key, token string) (*credential.Credential, error)
}

// maxTokenCredentialRequestBytes bounds the body of an anonymous request.
const maxTokenCredentialRequestBytes = 1 << 20

// TokenCredentialRequestPath is where the login API of the group login.concierge.<suffix> takes
// TokenCredentialRequests.
func TokenCredentialRequestPath(loginGroup string) string {
	return "/apis/" + loginGroup + "/" + loginv1alpha1.SchemeGroupVersion.Version + "/tokencredentialrequests"
}

// TokenCredentialRequestHandler answers TokenCredentialRequests of the group loginGroup
// (login.concierge.<suffix>) with exchanger, in JSON, as the aggregated API does: a missing token is
// a 422 Invalid, and any other failure to authenticate is the one status message "authentication failed".
func TokenCredentialRequestHandler(loginGroup string, exchanger Exchanger) http.Handler {
	apiVersion := loginGroup + "/" + loginv1alpha1.SchemeGroupVersion.Version
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in loginv1alpha1.TokenCredentialRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, maxTokenCredentialRequestBytes)).Decode(&in); err != nil {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "the body is not a JSON TokenCredentialRequest")
			return
		}
		if in.APIVersion != apiVersion || in.Kind != "TokenCredentialRequest" {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "expected a TokenCredentialRequest of "+apiVersion)
			return
		}
		// The token is checked before dryRun, as the aggregated API does.
		err := credential.RequireToken(loginGroup, in.Name, in.Spec.Token)
		if err == nil {
			err = requestcheck.DryRun(schema.GroupKind{Group: loginGroup}, in.Name, r.URL.Query()["dryRun"])
		}
		if err != nil {
			status := err.(apierrors.APIStatus).Status()
			status.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
			writeJSON(w, int(status.Code), status)
			return
		}
		key := authncache.Key{
			APIGroup: ptr.Deref(in.Spec.Authenticator.APIGroup, ""),
			Kind:     in.Spec.Authenticator.Kind,
			Name:     in.Spec.Authenticator.Name,
		}
		out := loginv1alpha1.TokenCredentialRequest{
			TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: "TokenCredentialRequest"},
		}
		cred, err := exchanger.Exchange(r.Context(), key, in.Spec.Token)
		switch {
		case errors.Is(err, credential.ErrAuthenticationFailed):
			out.Status.Message = ptr.To(credential.ErrAuthenticationFailed.Error())
		case err != nil:
			klog.FromContext(r.Context()).Error(err, "impersonation proxy could not exchange a token")
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "the token could not be exchanged")
			return
		default:
			out.Status.Credential = &loginv1alpha1.ClusterCredential{
				ExpirationTimestamp:   metav1.NewTime(cred.ExpirationTimestamp),
				ClientCertificateData: cred.ClientCertificateData,
				ClientKeyData:         cred.ClientKeyData,
			}
		}
		writeJSON(w, http.StatusCreated, out)
	})
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	writeJSON(w, code, metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: message,
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to do
}
