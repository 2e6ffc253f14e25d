package impersonator

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"sealion.dev/core/certauthority"
	"sealion.dev/core/testing/rawhttp"
	"sealion.dev/servers/concierge/internal/certextra"
)

// selfSubjectReviewBody asks the kube-apiserver who the request is from.
var selfSubjectReviewBody = []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)

const selfSubjectReviewPath = "/apis/authentication.k8s.io/v1/selfsubjectreviews"

// clientTLS is a TLS configuration for the proxy with a client certificate of ca.
func (p *proxyUnderTest) clientTLS(t *testing.T, ca *certauthority.CA, username string, groups, ous []string) *tls.Config {
	t.Helper()
	certPEM, keyPEM, _, err := ca.IssueClientCert(username, groups, ous, time.Hour)
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(p.caPEM))
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots}
}

func (p *proxyUnderTest) addr() string { return strings.TrimPrefix(p.url, "https://") }

// reviewedUser is the user a SelfSubjectReview answer names, or fails t.
func reviewedUser(t *testing.T, status int, body []byte) authenticationv1.UserInfo {
	t.Helper()
	require.Equal(t, http.StatusCreated, status, "SelfSubjectReview: %s", body)
	var review authenticationv1.SelfSubjectReview
	require.NoError(t, json.Unmarshal(body, &review))
	return review.Status.UserInfo
}

// auditEvent waits for the kube-apiserver's audit event of the request whose URI holds marker.
func (p *proxyUnderTest) auditEvent(t *testing.T, marker string) auditv1.Event {
	t.Helper()
	var found *auditv1.Event
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		f, err := os.Open(p.auditLog)
		if err != nil {
			return false, nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev auditv1.Event
			if json.Unmarshal(sc.Bytes(), &ev) == nil && strings.Contains(ev.RequestURI, marker) {
				found = &ev
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "no audit event for a request URI holding %q", marker)
	return *found
}

// The attacks of the review of the impersonation proxy (hop-by-hop stripping of the identity
// headers, OU extras from any CA), each tried against a real kube-apiserver: what it sees is
// what it answers (a SelfSubjectReview) and what it records (its audit log).
func TestProxyAttacksAgainstKubeAPIServer(t *testing.T) {
	p := startProxy(t)
	ctx := context.Background()
	_, err := p.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "work"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = p.admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "attacks-view"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
			// Authorized by the proxy, exec and port-forward reach the kube-apiserver (no pod exists).
			{APIGroups: []string{""}, Resources: []string{"pods/exec", "pods/portforward"}, Verbs: []string{"get", "create"}},
			{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"alice"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	bind(t, p.admin, "", "seals-attacks-view", "attacks-view", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "seals"})
	pinny := p.clientTLS(t, p.signer, "pinny", []string{"seals"}, nil)
	serviceAccount := "system:serviceaccount:default:impersonation-proxy"

	t.Run("Connection cannot strip the identity headers", func(t *testing.T) {
		for i, option := range connectionOptionsToTry() {
			t.Run(option, func(t *testing.T) {
				// A SelfSubjectReview answers for the user the kube-apiserver sees.
				resp, err := rawhttp.HTTP1(ctx, p.addr(), pinny, rawhttp.Request{Method: http.MethodPost, Target: selfSubjectReviewPath,
					Headers: [][2]string{{"Content-Type", "application/json"}, {"Connection", option}}, Body: selfSubjectReviewBody})
				require.NoError(t, err)
				who := reviewedUser(t, resp.Status, resp.Body)
				assert.Equal(t, "pinny", who.Username)
				assert.ElementsMatch(t, []string{"seals", "system:authenticated"}, who.Groups)
				assert.Contains(t, who.Extra, "authentication.kubernetes.io/credential-id")

				// A nested impersonation keeps the record of who asked.
				resp, err = rawhttp.HTTP1(ctx, p.addr(), pinny, rawhttp.Request{Method: http.MethodPost, Target: selfSubjectReviewPath,
					Headers: [][2]string{{"Content-Type", "application/json"}, {"Impersonate-User", "alice"}, {"Connection", "Impersonate-Extra-" + OriginalUserInfoExtraKey}},
					Body:    selfSubjectReviewBody})
				require.NoError(t, err)
				who = reviewedUser(t, resp.Status, resp.Body)
				assert.Equal(t, "alice", who.Username)
				require.Len(t, who.Extra[OriginalUserInfoExtraKey], 1)
				assert.Contains(t, who.Extra[OriginalUserInfoExtraKey][0], `"username":"pinny"`)

				// A watch, an exec (SPDY) and a port-forward (WebSocket) upgrade, as the audit log
				// records them; each request's URI is marked with a value of its own.
				for _, req := range []rawhttp.Request{
					{Method: http.MethodGet, Target: fmt.Sprintf("/api/v1/namespaces/work/configmaps?watch=true&timeoutSeconds=1&labelSelector=attempt%%3Dwatch-%d", i),
						Headers: [][2]string{{"Connection", option}}},
					{Method: http.MethodPost, Target: fmt.Sprintf("/api/v1/namespaces/work/pods/nopod/exec?command=true&stdout=true&container=exec-%d", i),
						Headers: [][2]string{{"Connection", "Upgrade, " + option}, {"Upgrade", "SPDY/3.1"}, {"X-Stream-Protocol-Version", "v4.channel.k8s.io"}}},
					{Method: http.MethodGet, Target: fmt.Sprintf("/api/v1/namespaces/work/pods/nopod/portforward?ports=%d", 20000+i),
						Headers: [][2]string{{"Connection", option + ", Upgrade"}, {"Upgrade", "websocket"}, {"Sec-WebSocket-Version", "13"},
							{"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}, {"Sec-WebSocket-Protocol", "v4.channel.k8s.io"}}},
				} {
					resp, err := rawhttp.HTTP1(ctx, p.addr(), pinny, req)
					require.NoError(t, err)
					// The proxy authorized it; the kube-apiserver finds no such pod, or no pods.
					require.Contains(t, []int{http.StatusOK, http.StatusNotFound}, resp.Status, "%s %s: %s", req.Method, req.Target, resp.Body)
					marker, _ := url.Parse(req.Target)
					ev := p.auditEvent(t, marker.RawQuery)
					assert.Equal(t, serviceAccount, ev.User.Username, "%s %s", req.Method, req.Target)
					require.NotNil(t, ev.ImpersonatedUser, "%s %s reached the kube-apiserver as the ServiceAccount itself", req.Method, req.Target)
					assert.Equal(t, "pinny", ev.ImpersonatedUser.Username, "%s %s", req.Method, req.Target)
					assert.ElementsMatch(t, []string{"seals", "system:authenticated"}, ev.ImpersonatedUser.Groups, "%s %s", req.Method, req.Target)
				}
			})
		}
	})

	t.Run("HTTP/2 answers as the user and refuses connection-specific headers", func(t *testing.T) {
		resp, err := rawhttp.HTTP2(ctx, p.addr(), pinny, rawhttp.Request{Method: http.MethodPost, Target: selfSubjectReviewPath,
			Headers: [][2]string{{"content-type", "application/json"}}, Body: selfSubjectReviewBody})
		require.NoError(t, err)
		assert.Equal(t, "pinny", reviewedUser(t, resp.Status, resp.Body).Username)
		for _, option := range connectionOptionsToTry() {
			for _, name := range []string{"connection", "keep-alive", "proxy-connection", "upgrade", "transfer-encoding"} {
				resp, err := rawhttp.HTTP2(ctx, p.addr(), pinny, rawhttp.Request{Method: http.MethodPost, Target: selfSubjectReviewPath,
					Headers: [][2]string{{"content-type", "application/json"}, {name, strings.ToLower(option)}}, Body: selfSubjectReviewBody})
				require.NoError(t, err)
				assert.True(t, resp.Status == http.StatusBadRequest || resp.Reset != "", "%s: %s over HTTP/2: %d %s", name, option, resp.Status, resp.Body)
			}
		}
	})

	t.Run("a remembered certificate is worthless without its key", func(t *testing.T) {
		// The proxy remembers verified chains; the TLS handshake still proves, on every
		// connection, that the client holds the key of the certificate it presents.
		resp, err := rawhttp.HTTP2(ctx, p.addr(), pinny, rawhttp.Request{Method: http.MethodPost, Target: selfSubjectReviewPath,
			Headers: [][2]string{{"content-type", "application/json"}}, Body: selfSubjectReviewBody})
		require.NoError(t, err)
		require.Equal(t, "pinny", reviewedUser(t, resp.Status, resp.Body).Username)

		otherKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		stolen := pinny.Clone()
		stolen.Certificates = []tls.Certificate{{Certificate: pinny.Certificates[0].Certificate, PrivateKey: otherKey}}
		for name, send := range map[string]func(context.Context, string, *tls.Config, rawhttp.Request) (*rawhttp.Response, error){
			"HTTP/1.1": rawhttp.HTTP1, "HTTP/2": rawhttp.HTTP2,
		} {
			resp, err := send(ctx, p.addr(), stolen, rawhttp.Request{Method: http.MethodPost, Target: selfSubjectReviewPath,
				Headers: [][2]string{{"content-type", "application/json"}}, Body: selfSubjectReviewBody})
			if err == nil {
				t.Errorf("%s: pinny's certificate with another key got an answer: %d %s", name, resp.Status, resp.Body)
			}
		}
	})

	t.Run("only the proxy's own signer's certificates carry extras", func(t *testing.T) {
		// The cluster's CA signs for anyone whose CSR is approved, OUs as asked: they are ignored,
		// as the kube-apiserver ignores them, reserved keys and plain OUs alike.
		forged := p.clientTLS(t, p.clusterCA, "node-user", []string{"seals"},
			[]string{"example.com/team=admins", "kubernetes.io/reserved=x", "ops"})
		resp, err := rawhttp.HTTP1(ctx, p.addr(), forged, rawhttp.Request{Method: http.MethodPost, Target: selfSubjectReviewPath,
			Headers: [][2]string{{"Content-Type", "application/json"}}, Body: selfSubjectReviewBody})
		require.NoError(t, err)
		who := reviewedUser(t, resp.Status, resp.Body)
		assert.Equal(t, "node-user", who.Username)
		assert.NotContains(t, who.Extra, "example.com/team")
		assert.NotContains(t, who.Extra, "kubernetes.io/reserved")
		assert.Contains(t, who.Extra, "authentication.kubernetes.io/credential-id")

		// The proxy's signer's certificates keep the extras the Concierge wrote...
		extras := p.clientTLS(t, p.signer, "pinny", []string{"seals"}, certextra.OrganizationalUnits(map[string][]string{"example.com/team": {"seals"}}))
		resp, err = rawhttp.HTTP1(ctx, p.addr(), extras, rawhttp.Request{Method: http.MethodPost, Target: selfSubjectReviewPath,
			Headers: [][2]string{{"Content-Type", "application/json"}}, Body: selfSubjectReviewBody})
		require.NoError(t, err)
		assert.Equal(t, authenticationv1.ExtraValue{"seals"}, reviewedUser(t, resp.Status, resp.Body).Extra["example.com/team"])

		// ...and what the Concierge would never write is refused.
		reserved := p.clientTLS(t, p.signer, "pinny", []string{"seals"}, []string{"kubernetes.io/reserved=x"})
		resp, err = rawhttp.HTTP1(ctx, p.addr(), reserved, rawhttp.Request{Method: http.MethodPost, Target: selfSubjectReviewPath,
			Headers: [][2]string{{"Content-Type", "application/json"}}, Body: selfSubjectReviewBody})
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, resp.Status, "%s", bytes.TrimSpace(resp.Body))
	})
}
