package impersonator

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"sealion.dev/core/testing/rawhttp"
)

func TestRemoveHopByHopHeaders(t *testing.T) {
	tests := []struct {
		name       string
		proto      int // minor version of HTTP/1; 1 when zero
		major      int // 1 when zero
		header     http.Header
		wantHeader http.Header
	}{
		{
			name:       "named headers go, with Connection",
			header:     http.Header{"Connection": {"Impersonate-User, x-custom"}, "Impersonate-User": {"alice"}, "X-Custom": {"1"}, "Accept": {"a"}},
			wantHeader: http.Header{"Accept": {"a"}},
		},
		{
			name:       "in any case, with any spacing, over several lines",
			header:     http.Header{"Connection": {"  iMPERSONATE-user ,,", "IMPERSONATE-GROUP"}, "Impersonate-User": {"alice"}, "Impersonate-Group": {"g"}, "Accept": {"a"}},
			wantHeader: http.Header{"Accept": {"a"}},
		},
		{
			name: "every hop-by-hop header goes",
			header: http.Header{"Keep-Alive": {"timeout=5"}, "Te": {"trailers"}, "Trailer": {"X"}, "Transfer-Encoding": {"chunked"},
				"Upgrade": {"websocket"}, "Proxy-Authorization": {"Basic x"}, "Proxy-Connection": {"keep-alive"}, "Proxy-Anything": {"x"}},
			wantHeader: http.Header{},
		},
		{
			name:       "a real upgrade keeps Connection: Upgrade and its protocols, and nothing else Connection names",
			header:     http.Header{"Connection": {"Upgrade, Impersonate-User, Keep-Alive"}, "Upgrade": {"SPDY/3.1"}, "Impersonate-User": {"alice"}, "Keep-Alive": {"x"}},
			wantHeader: http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}},
		},
		{
			name:       "an upgrade option without an Upgrade header is no upgrade",
			header:     http.Header{"Connection": {"upgrade"}},
			wantHeader: http.Header{},
		},
		{
			name:       "nor is an Upgrade header that Connection does not name",
			header:     http.Header{"Connection": {"keep-alive"}, "Upgrade": {"websocket"}},
			wantHeader: http.Header{},
		},
		{
			// httpstream.IsUpgradeRequest looks for the substring: the proxy looks for the option.
			name:       "nor an option that merely contains upgrade",
			header:     http.Header{"Connection": {"x-upgrade-please"}, "Upgrade": {"websocket"}},
			wantHeader: http.Header{},
		},
		{
			name:       "HTTP/1.0 has no upgrades",
			proto:      -1,
			header:     http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}},
			wantHeader: http.Header{},
		},
		{
			name:       "a header map filled other than canonically",
			header:     http.Header{"Connection": {"impersonate-user"}, "impersonate-user": {"alice"}, "IMPERSONATE-USER": {"bob"}},
			wantHeader: http.Header{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &http.Request{ProtoMajor: 1, ProtoMinor: 1, Header: tt.header}
			if tt.proto < 0 {
				r.ProtoMinor = 0
			}
			removeHopByHopHeaders(r)
			assert.Equal(t, tt.wantHeader, r.Header)
		})
	}
}

// connectionOptionsToTry are Connection header values naming every header the proxy sets for a
// user (and the forwarding header it appends to), in the spellings an attacker would try.
func connectionOptionsToTry() []string {
	names := []string{"Impersonate-User", "Impersonate-Group", "Impersonate-Uid", "Impersonate-Extra-" + OriginalUserInfoExtraKey,
		"Impersonate-Extra-Authentication.kubernetes.io%2Fcredential-Id", "X-Forwarded-For"}
	all := strings.Join(names, ", ")
	return []string{
		"Impersonate-User, Impersonate-Group",
		all,
		strings.ToLower(all),
		strings.ToUpper(all),
		strings.ReplaceAll(all, ", ", ",\t"),
		"keep-alive, " + all + ", close",
	}
}

// Through the proxy, nothing in Connection removes the identity the proxy chose: the fake
// kube-apiserver sees the authenticated user, for plain requests and for upgrades, over HTTP/1.1.
func TestConnectionCannotRemoveTheIdentity(t *testing.T) {
	kube := newFakeKube(t)
	front := testProxy(t, kube, false)
	addr := strings.TrimPrefix(front.URL, "https://")
	tlsConfig := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the test's own server
	ctx := context.Background()

	for _, option := range connectionOptionsToTry() {
		t.Run(option, func(t *testing.T) {
			for _, tc := range []struct {
				name    string
				headers [][2]string
				want    http.Header // at the fake kube-apiserver
				status  int
			}{
				{
					name:    "a request as the user",
					headers: [][2]string{{"Authorization", "Bearer user-token"}, {"Connection", option}},
					want:    http.Header{"Authorization": {"Bearer concierge-sa"}, "Impersonate-User": {"pinny"}, "Impersonate-Group": {"seals"}},
					status:  http.StatusOK,
				},
				{
					// Connection removes the client's own Impersonate-User: it is the client's header
					// to remove, and the request goes on as the client itself.
					name:    "a nested impersonation whose headers Connection names",
					headers: [][2]string{{"Authorization", "Bearer user-token"}, {"Impersonate-User", "allowed-target"}, {"Connection", option}},
					want:    http.Header{"Authorization": {"Bearer concierge-sa"}, "Impersonate-User": {"pinny"}, "Impersonate-Group": {"seals"}},
					status:  http.StatusOK,
				},
				{
					name:    "an upgrade",
					headers: [][2]string{{"Authorization", "Bearer user-token"}, {"Connection", "Upgrade, " + option}, {"Upgrade", "SPDY/3.1"}},
					want: http.Header{"Authorization": {"Bearer concierge-sa"}, "Impersonate-User": {"pinny"}, "Impersonate-Group": {"seals"},
						"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}},
					status: http.StatusSwitchingProtocols,
				},
				{
					name:    "a websocket upgrade",
					headers: [][2]string{{"Authorization", "Bearer user-token"}, {"Connection", option + ", upgrade"}, {"Upgrade", "websocket"}},
					want: http.Header{"Authorization": {"Bearer concierge-sa"}, "Impersonate-User": {"pinny"}, "Impersonate-Group": {"seals"},
						"Connection": {"Upgrade"}, "Upgrade": {"websocket"}},
					status: http.StatusSwitchingProtocols,
				},
			} {
				t.Run(tc.name, func(t *testing.T) {
					resp, err := rawhttp.HTTP1(ctx, addr, tlsConfig, rawhttp.Request{Method: http.MethodGet, Target: "/api/v1/namespaces/work/pods/p/exec", Headers: tc.headers})
					require.NoError(t, err)
					require.Equal(t, tc.status, resp.Status, "%s", resp.Body)
					got, _ := kube.last()
					require.NotNil(t, got, "the request did not reach the kube-apiserver")
					for name, want := range tc.want {
						assert.Equal(t, want, got.Values(name), "%s at the kube-apiserver", name)
					}
					assertOnlyIdentityHeaders(t, got, tc.want)
				})
			}
		})
	}
}

// A client that names Authorization in Connection drops its own credential: the request goes on
// anonymously, with no credential at all, and never with the proxy's.
func TestConnectionNamingAuthorization(t *testing.T) {
	kube := newFakeKube(t)
	front := testProxy(t, kube, false)
	addr := strings.TrimPrefix(front.URL, "https://")
	for _, token := range []string{"user-token", "sa-token"} {
		for _, option := range []string{"Authorization", "authorization, impersonate-user", "AUTHORIZATION"} {
			resp, err := rawhttp.HTTP1(context.Background(), addr, &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the test's own server
				rawhttp.Request{Method: http.MethodGet, Target: "/version", Headers: [][2]string{{"Authorization", "Bearer " + token}, {"Connection", option}}})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.Status)
			got, _ := kube.last()
			require.NotNil(t, got)
			assertOnlyIdentityHeaders(t, got, http.Header{})
		}
	}
}

// assertOnlyIdentityHeaders fails when got holds an identity header that want does not list.
func assertOnlyIdentityHeaders(t *testing.T, got, want http.Header) {
	t.Helper()
	for name := range got {
		if isIdentityHeader(name) && want.Values(name) == nil {
			t.Errorf("the kube-apiserver got %s: %q", name, got.Values(name))
		}
	}
}

// Over HTTP/2, connection-specific headers are malformed (RFC 9113 8.2.2): the server refuses the
// request (400, or a reset of the stream), and nothing reaches the kube-apiserver.
func TestHTTP2ConnectionHeadersAreRefused(t *testing.T) {
	kube := newFakeKube(t)
	front := testProxy(t, kube, true)
	addr := strings.TrimPrefix(front.URL, "https://")
	tlsConfig := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the test's own server
	ctx := context.Background()

	resp, err := rawhttp.HTTP2(ctx, addr, tlsConfig, rawhttp.Request{Method: http.MethodGet, Target: "/api/v1/pods",
		Headers: [][2]string{{"authorization", "Bearer user-token"}}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.Status, "a plain HTTP/2 request")
	got, _ := kube.last()
	require.NotNil(t, got)
	assert.Equal(t, []string{"pinny"}, got.Values("Impersonate-User"))

	for _, option := range connectionOptionsToTry() {
		for _, name := range []string{"connection", "proxy-connection", "keep-alive", "upgrade", "transfer-encoding"} {
			resp, err := rawhttp.HTTP2(ctx, addr, tlsConfig, rawhttp.Request{Method: http.MethodGet, Target: "/api/v1/pods",
				Headers: [][2]string{{"authorization", "Bearer user-token"}, {name, strings.ToLower(option)}}})
			require.NoError(t, err)
			assert.True(t, resp.Status == http.StatusBadRequest || resp.Reset != "", "%s: %s over HTTP/2 was not refused: %d %s", name, option, resp.Status, resp.Body)
			got, _ := kube.last()
			assert.Nil(t, got, "%s: %s over HTTP/2 reached the kube-apiserver", name, option)
		}
	}
}

// FuzzForwardedHeaders sends a user's request with any set of further headers (one "name: value"
// a line) through the proxy, and checks what reaches the kube-apiserver: the ServiceAccount's
// credential with exactly the proxy's impersonation headers for an authenticated user, or no
// credential at all, and never an identity header the client wrote.
func FuzzForwardedHeaders(f *testing.F) {
	for _, option := range connectionOptionsToTry() {
		f.Add("Connection: " + option)
		f.Add("Connection: Upgrade, " + option + "\nUpgrade: SPDY/3.1")
	}
	f.Add("Impersonate-User: allowed-target\nConnection: impersonate-group")
	f.Add("Impersonate-User: allowed-target\nImpersonate-Group: seals\nImpersonate-Extra-Scopes: x")
	f.Add("impersonate_user: system:admin\nx-remote-user: admin\nX_Remote_Group: system:masters")
	f.Add("Authorization: Bearer sa-token\nConnection: authorization")
	f.Add("Te: trailers\nTrailer: Impersonate-User\nKeep-Alive: timeout=1\nProxy-Authorization: Basic eA==")

	kube := newFakeKube(f)
	front := testProxy(f, kube, false)
	client := front.Client()
	// Every identity header value the proxy itself may send for the users of testTokens.
	proxyValues := []string{"Bearer concierge-sa", "Bearer sa-token", "pinny", "seals", "allowed-target", "system:authenticated"}

	f.Fuzz(func(t *testing.T, lines string) {
		header := http.Header{"Authorization": {"Bearer user-token"}}
		for line := range strings.SplitSeq(lines, "\n") {
			name, value, ok := strings.Cut(line, ":")
			if ok {
				header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
			}
		}
		req, err := http.NewRequest(http.MethodGet, front.URL+"/api/v1/pods", nil)
		require.NoError(t, err)
		req.Header = header
		resp, err := client.Do(req)
		if err != nil {
			return // net/http refused to send it (an invalid header name or value)
		}
		resp.Body.Close()
		got, _ := kube.last()
		if got == nil {
			return // refused by the proxy
		}
		for name, values := range got {
			if !isIdentityHeader(name) {
				continue
			}
			for _, v := range values {
				if strings.HasPrefix(canonicalName(name), "Impersonate-Extra-") && isOriginalUserInfo(name) {
					continue // the JSON of the authenticated user, checked below
				}
				if !slices.Contains(proxyValues, v) {
					t.Fatalf("the kube-apiserver got %s: %q, which the proxy never sends; the client sent %q", name, v, header)
				}
			}
		}
		switch auth := got.Get("Authorization"); auth {
		case "", "Bearer sa-token":
			if u := got.Values("Impersonate-User"); u != nil {
				t.Fatalf("a request without the ServiceAccount's credential impersonates %q; the client sent %q", u, header)
			}
		case "Bearer concierge-sa":
			u := got.Values("Impersonate-User")
			if len(u) != 1 || (u[0] != "pinny" && u[0] != "allowed-target") {
				t.Fatalf("the ServiceAccount impersonates %q; the client sent %q", u, header)
			}
			if u[0] == "allowed-target" && got.Get("Impersonate-Extra-"+url.PathEscape(OriginalUserInfoExtraKey)) == "" {
				t.Fatalf("a nested impersonation without the original user; the client sent %q", header)
			}
		default:
			t.Fatalf("the kube-apiserver got Authorization %q; the client sent %q", auth, header)
		}
	})
}

// isOriginalUserInfo reports whether the header name is the extra OriginalUserInfoExtraKey.
func isOriginalUserInfo(name string) bool {
	return strings.EqualFold(name, "Impersonate-Extra-"+url.PathEscape(OriginalUserInfoExtraKey))
}
