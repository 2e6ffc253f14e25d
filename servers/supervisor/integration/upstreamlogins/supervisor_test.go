package upstreamlogins

import (
	"context"
	"crypto"
	"net/http/httptest"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"sealion.dev/core/testing/controlplane"
	"sealion.dev/servers/supervisor/internal/discovery"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
	"sealion.dev/servers/supervisor/internal/oauth/sessions/sessionstest"
	"sealion.dev/servers/supervisor/internal/signingkeys"
)

// supervisor serves the discovery documents and OAuth endpoints of one issuer, with sessions in
// a real API server.
type supervisor struct {
	server    *httptest.Server
	issuerURL string
	jwks      *signingkeys.JWKS
}

// startSupervisor starts an API server and serves an issuer whose identity providers are idps,
// found in ups.
func startSupervisor(ctx context.Context, t *testing.T, ups *upstreams, idps ...issuer.IdentityProvider) *supervisor {
	t.Helper()
	cp := controlplane.StartForTest(t, controlplane.Options{})
	cfg := cp.RESTConfig()
	// As servers/supervisor sets them: client-go's defaults (5/s, bursts of 10) would add 200 ms
	// per Secret request once a login or two have used the burst.
	cfg.QPS, cfg.Burst = 25, 50
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Mounted as servers/supervisor mounts them: the CLI starts from the discovery documents.
	mux := issuer.NewMux(discovery.Endpoints{}, oauth.New(sessions.NewStorage(kube.CoreV1().Secrets(namespace), ups, sessionstest.Keys()), ups))
	s := &supervisor{server: httptest.NewTLSServer(mux)}
	t.Cleanup(s.server.Close)
	s.issuerURL = s.server.URL + "/fd"
	keys, err := signingkeys.NewJWKS()
	if err != nil {
		t.Fatal(err)
	}
	if s.jwks, err = signingkeys.ParseJWKS(keys); err != nil {
		t.Fatal(err)
	}
	if err := mux.Set([]*issuer.Issuer{{
		URL: s.issuerURL, Namespace: namespace, Name: "fd", UID: "fd-uid", JWKS: s.jwks,
		TokenSigningKey: random(t), StateSigningKey: random(t), StateEncryptionKey: random(t), CSRFKey: random(t),
		IdentityProviders: idps,
	}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// cli is the pinniped CLI's OAuth client.
func (s *supervisor) cli() *oauth2.Config {
	return &oauth2.Config{
		ClientID: provider.PinnipedCLIClientID,
		Endpoint: oauth2.Endpoint{
			AuthURL: s.issuerURL + provider.AuthorizePath, TokenURL: s.issuerURL + provider.TokenPath,
			AuthStyle: oauth2.AuthStyleInParams,
		},
		RedirectURL: cliCallback,
		Scopes:      []string{"openid", "offline_access", "pinniped:request-audience", "username", "groups"},
	}
}

// verify checks an ID token the Supervisor issued to the CLI and returns its claims.
func (s *supervisor) verify(ctx context.Context, t *testing.T, raw string) map[string]any {
	t.Helper()
	v := oidc.NewVerifier(s.issuerURL, &oidc.StaticKeySet{PublicKeys: []crypto.PublicKey{s.jwks.Public.Keys[0].Key}},
		&oidc.Config{ClientID: provider.PinnipedCLIClientID, SupportedSigningAlgs: []string{"ES256"}})
	idt, err := v.Verify(ctx, raw)
	if err != nil {
		t.Fatalf("verifying the Supervisor's ID token: %v", err)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	return claims
}
