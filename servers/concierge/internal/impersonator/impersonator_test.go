package impersonator

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	unionauth "k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/rest"
)

func TestScrubClientHeaders(t *testing.T) {
	h := http.Header{}
	for _, name := range []string{"Authorization", "Impersonate-User", "impersonate-group", "Impersonate-Extra-Scopes", "Impersonate-Uid",
		"X-Remote-User", "x-remote-group", "X-Remote-Extra-Foo", "Accept", "User-Agent", "X-Forwarded-For", "x-forwarded-host",
		"X-Forwarded-Proto", "X-Real-IP", "Forwarded", "X-Request-Id"} {
		h[name] = []string{"v"}
	}
	scrubClientHeaders(h)
	var left []string
	for name := range h {
		left = append(left, name)
	}
	assert.ElementsMatch(t, []string{"Accept", "User-Agent", "X-Request-Id"}, left)
}

// allowAll authorizes everything except impersonation of anyone but "allowed-target".
var allowAll = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetVerb() == "impersonate" && a.GetName() != "allowed-target" {
		return authorizer.DecisionDeny, "no", nil
	}
	if a.GetResource() == "secrets" {
		return authorizer.DecisionDeny, "no secrets", nil
	}
	return authorizer.DecisionAllow, "", nil
})

// originalUserInfoHeader carries OriginalUserInfoExtraKey to the kube-apiserver.
const originalUserInfoHeader = "Impersonate-Extra-" + OriginalUserInfoExtraKey

// testTokens are the bearer tokens of the unit tests' proxy: "sa-token" is a ServiceAccount (has
// a UID), "user-token" a person (no UID).
var testTokens = TokenAuthenticated(authenticator.TokenFunc(func(_ context.Context, token string) (*authenticator.Response, bool, error) {
	switch token {
	case "sa-token":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", UID: "sa-uid", Groups: []string{"system:serviceaccounts"}}}, true, nil
	case "user-token":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "pinny", Groups: []string{"seals"}}}, true, nil
	case "reserved-extra-token":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "mallory", Extra: map[string][]string{OriginalUserInfoExtraKey: {"{}"}}}}, true, nil
	case "mixed-case-reserved-extra-token":
		// The kube-apiserver lowercases extra keys: this one would arrive as OriginalUserInfoExtraKey.
		return &authenticator.Response{User: &user.DefaultInfo{Name: "mallory", Extra: map[string][]string{"Original-User-Info.Impersonation-Proxy.Concierge.Pinniped.DEV": {"{}"}}}}, true, nil
	}
	return nil, false, nil
}))

// fakeKube stands in for the kube-apiserver: it records the last request's headers and path, and
// answers upgrade requests with 101 Switching Protocols and then echoes what it reads; or, given
// ?write=N, writes N bytes, half-closes and reads until the proxy closes, then says so on ended.
type fakeKube struct {
	*httptest.Server
	mu    sync.Mutex
	got   http.Header
	path  string
	ended chan struct{}
}

func newFakeKube(t testing.TB) *fakeKube {
	k := &fakeKube{ended: make(chan struct{}, 1)}
	k.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		k.got, k.path = r.Header.Clone(), r.URL.Path
		k.mu.Unlock()
		if r.Header.Get("Upgrade") == "" {
			w.WriteHeader(http.StatusOK)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + r.Header.Get("Upgrade") + "\r\n\r\n")
		_ = rw.Flush()
		if n, err := strconv.Atoi(r.URL.Query().Get("write")); err == nil {
			_, _ = conn.Write(make([]byte, n))
			_ = closeWrite(conn)
			_, _ = io.Copy(io.Discard, rw)
			k.ended <- struct{}{}
			return
		}
		_, _ = io.Copy(conn, rw)
	}))
	t.Cleanup(k.Close)
	return k
}

// last returns the headers and path of the last request that reached k, and forgets them.
func (k *fakeKube) last() (http.Header, string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	got, path := k.got, k.path
	k.got, k.path = nil, ""
	return got, path
}

// testProxy is the proxy in front of kube, forwarding as the ServiceAccount "concierge-sa", with
// testTokens and the allowAll authorizer; served over TLS for HTTP/1.1 only unless http2.
func testProxy(t testing.TB, kube *fakeKube, http2 bool) *httptest.Server {
	return testProxyWith(t, kube, http2, nil)
}

// testProxyWith is testProxy with the Config changed by change.
func testProxyWith(t testing.TB, kube *fakeKube, http2 bool, change func(*Config)) *httptest.Server {
	authn := unionauth.NewFailOnError(bearertoken.New(testTokens), anonymous.NewAuthenticator(nil))
	c := Config{
		APIServer:                  &rest.Config{Host: kube.URL, BearerToken: "concierge-sa", TLSClientConfig: rest.TLSClientConfig{Insecure: true}},
		Authenticator:              authn,
		Authorizer:                 allowAll,
		TokenCredentialRequests:    http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }),
		TokenCredentialRequestPath: "/apis/login.concierge.pinniped.dev/v1alpha1/tokencredentialrequests",
	}
	if change != nil {
		change(&c)
	}
	handler, err := New(c)
	require.NoError(t, err)
	front := httptest.NewUnstartedServer(handler)
	front.EnableHTTP2 = http2
	front.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	front.StartTLS()
	t.Cleanup(front.Close)
	return front
}

func TestForwarding(t *testing.T) {
	kube := newFakeKube(t)
	front := testProxy(t, kube, false)

	tests := []struct {
		name       string
		method     string
		path       string
		headers    map[string]string
		wantCode   int
		wantHeader map[string][]string // expected at the backend; nil values mean absent
	}{
		{
			name: "a token user is impersonated by the Concierge", path: "/api/v1/pods",
			headers:  map[string]string{"Authorization": "Bearer user-token", "X-Remote-User": "admin"},
			wantCode: http.StatusOK,
			wantHeader: map[string][]string{
				"Authorization": {"Bearer concierge-sa"}, "Impersonate-User": {"pinny"},
				"Impersonate-Group": {"seals"}, "X-Remote-User": nil, originalUserInfoHeader: nil,
			},
		},
		{
			name: "a ServiceAccount token passes through", path: "/api/v1/pods",
			headers:    map[string]string{"Authorization": "Bearer sa-token"},
			wantCode:   http.StatusOK,
			wantHeader: map[string][]string{"Authorization": {"Bearer sa-token"}, "Impersonate-User": nil},
		},
		{
			name: "non-resource paths are forwarded as they are", path: "/openapi/v3",
			headers:    map[string]string{"Authorization": "Bearer user-token"},
			wantCode:   http.StatusOK,
			wantHeader: map[string][]string{"Impersonate-User": {"pinny"}},
		},
		{
			name: "anonymous requests go without credentials", path: "/version",
			wantCode:   http.StatusOK,
			wantHeader: map[string][]string{"Authorization": nil, "Impersonate-User": nil},
		},
		{
			// The cluster, which gets no credentials, decides: the proxy's authorizer does not.
			name: "anonymous requests are left to the cluster", path: "/api/v1/namespaces/kube-system/secrets",
			wantCode:   http.StatusOK,
			wantHeader: map[string][]string{"Authorization": nil, "Impersonate-User": nil},
		},
		{
			name: "anonymous impersonation is refused", path: "/api/v1/pods",
			headers:  map[string]string{"Impersonate-User": "system:admin"},
			wantCode: http.StatusForbidden,
		},
		{
			name: "nested impersonation the user may do", path: "/api/v1/pods",
			headers:  map[string]string{"Authorization": "Bearer user-token", "Impersonate-User": "allowed-target"},
			wantCode: http.StatusOK,
			wantHeader: map[string][]string{
				"Authorization": {"Bearer concierge-sa"}, "Impersonate-User": {"allowed-target"},
				"Impersonate-Group":    {"system:authenticated"},
				originalUserInfoHeader: {`{"username":"pinny","groups":["seals"]}`},
			},
		},
		{
			name: "nested impersonation with a ServiceAccount token", path: "/api/v1/pods",
			headers:  map[string]string{"Authorization": "Bearer sa-token", "Impersonate-User": "allowed-target"},
			wantCode: http.StatusOK,
			wantHeader: map[string][]string{
				"Authorization": {"Bearer concierge-sa"}, "Impersonate-User": {"allowed-target"},
				originalUserInfoHeader: {`{"username":"system:serviceaccount:ns:sa","uid":"sa-uid","groups":["system:serviceaccounts"]}`},
			},
		},
		{
			// RBAC allows the extra here (its value is the name authorized); the proxy still refuses.
			name: "no client may set the original user itself", path: "/api/v1/pods",
			headers: map[string]string{
				"Authorization": "Bearer user-token", "Impersonate-User": "allowed-target",
				originalUserInfoHeader: "allowed-target",
			},
			wantCode: http.StatusForbidden,
		},
		{
			name: "nor be authenticated with it", path: "/api/v1/pods",
			headers:  map[string]string{"Authorization": "Bearer reserved-extra-token"},
			wantCode: http.StatusForbidden,
		},
		{
			name: "nor in another case", path: "/api/v1/pods",
			headers:  map[string]string{"Authorization": "Bearer mixed-case-reserved-extra-token"},
			wantCode: http.StatusForbidden,
		},
		{
			name: "nor ask for it in another case", path: "/api/v1/pods",
			headers: map[string]string{
				"Authorization": "Bearer user-token", "Impersonate-User": "allowed-target",
				"Impersonate-Extra-Original-User-Info.Impersonation-Proxy.Concierge.Pinniped.Dev": "allowed-target",
			},
			wantCode: http.StatusForbidden,
		},
		{
			// The kube-apiserver would record the client's claims as the source of the request.
			name: "the client's address is the proxy's to tell", path: "/api/v1/pods",
			headers: map[string]string{
				"Authorization": "Bearer user-token", "X-Forwarded-For": "192.0.2.1", "X-Real-Ip": "192.0.2.1",
				"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "http", "Forwarded": "for=192.0.2.1",
			},
			wantCode: http.StatusOK,
			wantHeader: map[string][]string{
				"X-Forwarded-For": {"127.0.0.1"}, "X-Real-Ip": nil, "X-Forwarded-Host": nil, "X-Forwarded-Proto": nil, "Forwarded": nil,
			},
		},
		{
			name: "nested impersonation the user may not do", path: "/api/v1/pods",
			headers:  map[string]string{"Authorization": "Bearer user-token", "Impersonate-User": "system:admin"},
			wantCode: http.StatusForbidden,
		},
		{
			name: "the end user is authorized", path: "/api/v1/namespaces/kube-system/secrets",
			headers:  map[string]string{"Authorization": "Bearer user-token"},
			wantCode: http.StatusForbidden,
		},
		{
			name: "an unknown token is refused", path: "/api/v1/pods",
			headers:  map[string]string{"Authorization": "Bearer nope"},
			wantCode: http.StatusUnauthorized,
		},
		{
			name: "TokenCredentialRequests are answered by the proxy", method: http.MethodPost,
			path:     "/apis/login.concierge.pinniped.dev/v1alpha1/tokencredentialrequests",
			wantCode: http.StatusTeapot,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube.last()
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			req, err := http.NewRequest(method, front.URL+tt.path, strings.NewReader(""))
			require.NoError(t, err)
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			client := front.Client()
			client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			resp, err := client.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, tt.wantCode, resp.StatusCode)
			got, gotPath := kube.last()
			if tt.wantCode != http.StatusOK {
				assert.Nil(t, got, "the request must not reach the kube-apiserver")
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tt.path, gotPath, "the kube-apiserver must get the path as the client sent it")
			for k, v := range tt.wantHeader {
				assert.Equal(t, v, got.Values(k), "header %s", k)
			}
		})
	}
}
