package localusers

import (
	"encoding/json"
	"io"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authenticationv1beta1 "k8s.io/api/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// maxRequestBytes bounds a TokenReview request; real ones are a few kilobytes.
const maxRequestBytes = 1 << 20

var tokenReviewCodecs = func() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	utilruntime.Must(authenticationv1.AddToScheme(scheme))
	utilruntime.Must(authenticationv1beta1.AddToScheme(scheme))
	return serializer.NewCodecFactory(scheme)
}()

// NewHandler serves the TokenReview webhook protocol: it takes a POSTed authentication.k8s.io
// v1 or v1beta1 TokenReview and answers with the same kind and version, status filled in.
// A rejected token gets authenticated=false and nothing else; a body that is not a TokenReview
// gets 400.
func NewHandler(authenticator *Authenticator) http.Handler {
	return &handler{authenticator: authenticator}
}

type handler struct {
	authenticator *Authenticator
}

func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	result := resultInvalid
	defer func() { reviews.WithLabelValues(result).Inc() }()
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST is allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxRequestBytes))
	if err != nil {
		http.Error(w, "could not read request body", http.StatusBadRequest)
		return
	}
	obj, gvk, err := tokenReviewCodecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		klog.V(2).InfoS("rejected request: body is not a TokenReview", "err", err)
		http.Error(w, "request body is not a TokenReview", http.StatusBadRequest)
		return
	}

	var response runtime.Object
	switch review := obj.(type) {
	case *authenticationv1.TokenReview:
		review.Status = authenticationv1.TokenReviewStatus{}
		result = resultRefused
		if user, ok := h.authenticator.AuthenticateToken(review.Spec.Token); ok {
			result = resultAuthenticated
			review.Status = authenticationv1.TokenReviewStatus{
				Authenticated: true,
				User:          authenticationv1.UserInfo{Username: user.Username, Groups: user.Groups},
				// A password is not bound to an audience, so it is valid for whichever was asked for.
				Audiences: review.Spec.Audiences,
			}
		}
		review.Spec = authenticationv1.TokenReviewSpec{} // the caller reads only the status; keep the token out of the reply
		response = review
	case *authenticationv1beta1.TokenReview:
		review.Status = authenticationv1beta1.TokenReviewStatus{}
		result = resultRefused
		if user, ok := h.authenticator.AuthenticateToken(review.Spec.Token); ok {
			result = resultAuthenticated
			review.Status = authenticationv1beta1.TokenReviewStatus{
				Authenticated: true,
				User:          authenticationv1beta1.UserInfo{Username: user.Username, Groups: user.Groups},
				Audiences:     review.Spec.Audiences,
			}
		}
		review.Spec = authenticationv1beta1.TokenReviewSpec{}
		response = review
	default:
		http.Error(w, "request body is not a TokenReview", http.StatusBadRequest)
		return
	}
	writeReview(w, response, gvk)
}

func writeReview(w http.ResponseWriter, review runtime.Object, gvk *schema.GroupVersionKind) {
	review.GetObjectKind().SetGroupVersionKind(*gvk)
	encoded, err := json.Marshal(review)
	if err != nil {
		klog.ErrorS(err, "could not encode TokenReview response")
		http.Error(w, "could not encode response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(encoded)
}
