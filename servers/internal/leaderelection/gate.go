package leaderelection

import (
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
)

// Wrap returns a copy of config whose requests that write are refused with ErrNotLeader while
// this replica does not lead.
func (e *Elector) Wrap(config *rest.Config) *rest.Config {
	wrapped := rest.CopyConfig(config)
	wrapped.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &gate{next: rt, leading: e.IsLeader} })
	return wrapped
}

// gate is the transport of a client whose writes only the leader makes.
type gate struct {
	next    http.RoundTripper
	leading func() bool
}

// requestInfo parses a request's path as the API server does, into verb, group, resource and
// subresource.
var requestInfo = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// questions are the resources whose creates write nothing: they ask the API server to
// authenticate or authorize, and every replica needs the answers to serve.
var questions = map[string]sets.Set[string]{
	"authentication.k8s.io": sets.New("tokenreviews", "selfsubjectreviews"),
	"authorization.k8s.io": sets.New("subjectaccessreviews", "selfsubjectaccessreviews",
		"localsubjectaccessreviews", "selfsubjectrulesreviews"),
}

func (g *gate) RoundTrip(req *http.Request) (*http.Response, error) {
	if g.leading() || !writes(req) {
		return g.next.RoundTrip(req)
	}
	// A RoundTripper closes the body, even when it sends nothing.
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, fmt.Errorf("%w: refusing %s %s", ErrNotLeader, req.Method, req.URL.Path)
}

// writes reports whether req changes something in the cluster. Exec into a pod reads a file of
// the pod (the kube cert agent's key), and reviews are questions.
func writes(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	info, err := requestInfo.NewRequestInfo(req)
	if err != nil || !info.IsResourceRequest {
		// Not the API's shape: refuse what cannot be told to be harmless.
		return true
	}
	if info.APIGroup == "" && info.Resource == "pods" && info.Subresource == "exec" {
		return false
	}
	return info.Verb != "create" || info.Subresource != "" || !questions[info.APIGroup].Has(info.Resource)
}
