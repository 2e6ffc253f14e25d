package impersonator

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/filters/impersonation"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

func TestImpersonationHeaders(t *testing.T) {
	h := impersonationHeaders(&user.DefaultInfo{
		Name: "pinny", UID: "u-1", Groups: []string{"seals", "system:authenticated"},
		Extra: map[string][]string{"scopes.example.com/a b": {"x", "y"}},
	})
	assert.Equal(t, []string{"pinny"}, h.Values("Impersonate-User"))
	assert.Equal(t, []string{"u-1"}, h.Values("Impersonate-Uid"))
	assert.Equal(t, []string{"seals"}, h.Values("Impersonate-Group"), "the kube-apiserver adds system:authenticated itself")
	assert.Equal(t, []string{"x", "y"}, h.Values("Impersonate-Extra-Scopes.example.com%2Fa%20b"))
}

// TestImpersonationHeadersActAsTheSameUser runs the kube-apiserver's own impersonation filters,
// legacy and constrained (KEP 5284, on by default since Kubernetes 1.36, which falls back to
// legacy), on the headers naming every group and on the proxy's, which may leave out
// system:authenticated: both must act as the same user, whatever the user.
func TestImpersonationHeadersActAsTheSameUser(t *testing.T) {
	users := map[string]*user.DefaultInfo{
		"a user with groups":                {Name: "pinny", Groups: []string{"seals", "devs", "system:authenticated"}},
		"a user with no group of its own":   {Name: "pinny", Groups: []string{"system:authenticated"}},
		"system:authenticated not last":     {Name: "pinny", Groups: []string{"system:authenticated", "seals"}},
		"system:authenticated twice":        {Name: "pinny", Groups: []string{"seals", "system:authenticated", "system:authenticated"}},
		"system:unauthenticated too":        {Name: "pinny", Groups: []string{"system:unauthenticated", "system:authenticated"}},
		"system:anonymous":                  {Name: "system:anonymous", Groups: []string{"seals", "system:authenticated"}},
		"a ServiceAccount's name, no group": {Name: "system:serviceaccount:ns:sa", Groups: []string{"system:authenticated"}},
		"a ServiceAccount's name, groups":   {Name: "system:serviceaccount:ns:sa", Groups: []string{"devs", "system:authenticated"}},
		"a node":                            {Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}},
		"system:masters":                    {Name: "admin", Groups: []string{"system:masters", "system:authenticated"}},
		"no groups at all":                  {Name: "pinny"},
		"uid and extras": {Name: "pinny", UID: "u-1", Groups: []string{"seals", "system:authenticated"},
			Extra: map[string][]string{"example.com/scopes": {"a", "b"}, "authentication.kubernetes.io/credential-id": {"X509SHA256=ab"}}},
	}
	allowAll := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionAllow, "", nil
	})
	codecs := clientgoscheme.Codecs.WithoutConversion()
	resolver := &genericapirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	filters := map[string]func(http.Handler) http.Handler{
		"legacy": func(h http.Handler) http.Handler { return impersonation.WithImpersonation(h, allowAll, codecs) },
		"constrained": func(h http.Handler) http.Handler {
			return genericapifilters.WithRequestInfo(impersonation.WithConstrainedImpersonation(h, allowAll, codecs), resolver)
		},
	}
	proxy := &user.DefaultInfo{Name: "system:serviceaccount:concierge:impersonation-proxy", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	actAs := func(t *testing.T, filter func(http.Handler) http.Handler, h http.Header) user.Info {
		t.Helper()
		var got user.Info
		handler := filter(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			got, _ = genericapirequest.UserFrom(r.Context())
		}))
		req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/pods", nil)
		req = req.WithContext(genericapirequest.WithUser(req.Context(), proxy))
		req.Header = h
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		require.NotNil(t, got)
		return got
	}
	for name, u := range users {
		for filterName, filter := range filters {
			t.Run(name+"/"+filterName, func(t *testing.T) {
				every := impersonationHeaders(u)
				every.Del(authenticationv1.ImpersonateGroupHeader)
				for _, g := range u.Groups {
					every.Add(authenticationv1.ImpersonateGroupHeader, g)
				}
				want := actAs(t, filter, every)
				got := actAs(t, filter, impersonationHeaders(u))
				assert.Equal(t, want.GetName(), got.GetName())
				assert.Equal(t, want.GetUID(), got.GetUID())
				assert.Equal(t, want.GetGroups(), got.GetGroups())
				assert.Equal(t, want.GetExtra(), got.GetExtra())
			})
		}
	}
}

func TestWithoutImpliedAuthenticated(t *testing.T) {
	// The case the change is for: the group is left out.
	assert.Equal(t, []string{"seals"}, withoutImpliedAuthenticated("pinny", []string{"seals", "system:authenticated"}))
	// And the cases where the kube-apiserver would not add it back as it was: kept.
	for _, c := range []struct {
		name   string
		groups []string
	}{
		{"pinny", []string{"system:authenticated"}},
		{"pinny", []string{"system:authenticated", "seals"}},
		{"pinny", []string{"seals", "system:authenticated", "system:authenticated"}},
		{"pinny", []string{"system:unauthenticated", "system:authenticated"}},
		{"system:anonymous", []string{"seals", "system:authenticated"}},
		{"pinny", nil},
	} {
		assert.Equal(t, c.groups, withoutImpliedAuthenticated(c.name, c.groups), "%s %v", c.name, c.groups)
	}
}
