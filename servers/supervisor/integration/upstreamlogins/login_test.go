package upstreamlogins

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"sealion.dev/core/testing/controlplane"
	"sealion.dev/fixtures/dex"
	"sealion.dev/servers/supervisor/internal/connectors/oidcidp"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
	"sealion.dev/servers/supervisor/internal/oauth/sessions/sessionstest"
	"sealion.dev/servers/supervisor/internal/signingkeys"
)

const (
	namespace   = "supervisor"
	idpName     = "dex"
	cliCallback = "http://127.0.0.1:48095/callback"
)

func TestLoginRefreshAndTokenExchangeWithDex(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver and Dex as processes; skipped under -short")
	}
	// The first run may build Dex from source, which takes minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	cp := controlplane.StartForTest(t, controlplane.Options{})
	kube, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The Supervisor listens first, so that Dex knows its callback URL.
	ups := &upstreams{}
	mux := issuer.NewMux(oauth.New(sessions.NewStorage(kube.CoreV1().Secrets(namespace), ups, sessionstest.Keys()), ups))
	supervisor := httptest.NewTLSServer(mux)
	defer supervisor.Close()
	issuerURL := supervisor.URL + "/fd"

	idp, err := dex.Start(ctx, dex.Options{Clients: []dex.Client{{
		ID: "supervisor", Secret: "supervisor-secret", RedirectURIs: []string{issuerURL + provider.CallbackPath},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = idp.Close() }()
	ups.add(issuer.TypeOIDC, "dex-idp", oidcidp.New(oidcidp.Config{
		IssuerURL: idp.IssuerURL, ClientID: "supervisor", ClientSecret: "supervisor-secret",
		Scopes:        []string{"offline_access", "email", "profile", "groups"},
		UsernameClaim: "email", GroupsClaim: "groups", HTTPClient: idp.HTTPClient(),
	}))

	keys, err := signingkeys.NewJWKS()
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := signingkeys.ParseJWKS(keys)
	if err != nil {
		t.Fatal(err)
	}
	if err := mux.Set([]*issuer.Issuer{{
		URL: issuerURL, Namespace: namespace, Name: "fd", UID: "fd-uid", JWKS: jwks,
		TokenSigningKey: random(t), StateSigningKey: random(t), StateEncryptionKey: random(t), CSRFKey: random(t),
		IdentityProviders: []issuer.IdentityProvider{{
			DisplayName: idpName, Type: issuer.TypeOIDC, Flows: []issuer.Flow{issuer.FlowBrowserAuthcode},
			Kind: "OIDCIdentityProvider", Name: "dex-idp", UID: "dex-uid",
		}},
	}}); err != nil {
		t.Fatal(err)
	}

	// The CLI's side of the login.
	pool := x509.NewCertPool()
	pool.AddCert(supervisor.Certificate())
	pool.AppendCertsFromPEM(idp.CABundle)
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	cliHTTP := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	cliCtx := context.WithValue(ctx, oauth2.HTTPClient, cliHTTP)
	cli := &oauth2.Config{
		ClientID: provider.PinnipedCLIClientID,
		Endpoint: oauth2.Endpoint{
			AuthURL: issuerURL + provider.AuthorizePath, TokenURL: issuerURL + provider.TokenPath,
			AuthStyle: oauth2.AuthStyleInParams,
		},
		RedirectURL: cliCallback,
		Scopes:      []string{"openid", "offline_access", "pinniped:request-audience", "username", "groups"},
	}
	verifier, nonce, state := oauth2.GenerateVerifier(), rand.Text(), rand.Text()
	authURL := cli.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("pinniped_idp_name", idpName))

	start := time.Now()
	callback := loginWithoutBrowser(t, transport, authURL, dex.DefaultUser)
	if callback.Query().Get("state") != state || callback.Query().Get("code") == "" {
		t.Fatalf("CLI callback %s: want a code and state %q", callback, state)
	}
	tok, err := cli.Exchange(cliCtx, callback.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("redeeming the Supervisor's code: %v", err)
	}
	t.Logf("login through Dex and code redemption took %v", time.Since(start).Round(time.Millisecond))

	verify := func(raw, audience string) map[string]any {
		t.Helper()
		v := oidc.NewVerifier(issuerURL, &oidc.StaticKeySet{PublicKeys: []crypto.PublicKey{jwks.Public.Keys[0].Key}},
			&oidc.Config{ClientID: audience, SupportedSigningAlgs: []string{"ES256"}})
		idt, err := v.Verify(ctx, raw)
		if err != nil {
			t.Fatalf("verifying the Supervisor's ID token for %s: %v", audience, err)
		}
		var claims map[string]any
		if err := idt.Claims(&claims); err != nil {
			t.Fatal(err)
		}
		return claims
	}
	claims := verify(tok.Extra("id_token").(string), provider.PinnipedCLIClientID)
	wantSubPrefix := idp.IssuerURL + "?idpName=" + idpName + "&sub="
	if claims["username"] != dex.DefaultUser.Email || !slices.Equal(strs(claims["groups"]), dex.DefaultUser.Groups) ||
		claims["nonce"] != nonce || !strings.HasPrefix(claims["sub"].(string), wantSubPrefix) {
		t.Errorf("ID token claims %v; want Dex's user %s with groups %v", claims, dex.DefaultUser.Email, dex.DefaultUser.Groups)
	}

	// The session lives in Secrets of the API server.
	secrets, err := kube.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	for _, s := range secrets.Items {
		stored[string(s.Type)]++
		if s.Annotations[sessions.GarbageCollectAfterAnnotation] == "" {
			t.Errorf("Secret %s has no %s annotation", s.Name, sessions.GarbageCollectAfterAnnotation)
		}
	}
	// The PKCE and OpenID Connect request sessions are deleted when the code is redeemed; the
	// used code stays (marked used) so that a replay revokes the tokens.
	want := map[string]int{}
	for _, kind := range []string{"authcode", "access-token", "refresh-token"} {
		want[string(sessions.SecretType(kind))] = 1
	}
	if !maps.Equal(stored, want) {
		t.Errorf("stored Secrets by type: %v, want %v", stored, want)
	}

	// A refresh goes to Dex with the upstream refresh token.
	refreshed, err := cli.TokenSource(cliCtx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if c := verify(refreshed.Extra("id_token").(string), provider.PinnipedCLIClientID); c["sub"] != claims["sub"] || c["username"] != claims["username"] {
		t.Errorf("refreshed ID token claims %v; want the same user", c)
	}

	// Token exchange for a cluster's audience.
	resp, err := cliHTTP.PostForm(issuerURL+provider.TokenPath, url.Values{
		"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "client_id": {provider.PinnipedCLIClientID},
		"audience": {"cluster-1"}, "subject_token": {refreshed.AccessToken},
		"subject_token_type":   {"urn:ietf:params:oauth:token-type:access_token"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:jwt"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var exchanged struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&exchanged); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("token exchange: %s, %v", resp.Status, err)
	}
	if c := verify(exchanged.AccessToken, "cluster-1"); c["username"] != dex.DefaultUser.Email {
		t.Errorf("cluster ID token claims %v", c)
	}

	// The rotated refresh token used again: refused, and the login ends (RFC 6819 5.2.2.3).
	if _, err := cli.TokenSource(cliCtx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err == nil {
		t.Error("the rotated refresh token still works")
	}
	if _, err := cli.TokenSource(cliCtx, &oauth2.Token{RefreshToken: refreshed.RefreshToken}).Token(); err == nil {
		t.Error("after the rotated refresh token was used again, the newest one still works")
	}
}

var formAction = regexp.MustCompile(`<form[^>]*action="([^"]*)"`)

// loginWithoutBrowser follows the login from authURL through Dex's password form, as a browser
// would, and returns the URL it finally redirects to on the CLI's loopback listener.
func loginWithoutBrowser(t *testing.T, transport http.RoundTripper, authURL string, user dex.User) *url.URL {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar, Transport: transport, Timeout: 30 * time.Second,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if req.URL.Scheme == "http" {
				return http.ErrUseLastResponse // the CLI's listener, which this test does not run
			}
			return nil
		}}
	resp, err := browser.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	m := formAction.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("expected Dex's login form, got %s at %s:\n%s", resp.Status, resp.Request.URL, page)
	}
	action, err := resp.Request.URL.Parse(html.UnescapeString(string(m[1])))
	if err != nil {
		t.Fatal(err)
	}
	resp, err = browser.PostForm(action.String(), url.Values{"login": {user.Email}, "password": {user.Password}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	loc, err := resp.Location()
	if err != nil || !strings.HasPrefix(loc.String(), "http://127.0.0.1:48095/") {
		t.Fatalf("login ended with %s at %s, not at the CLI:\n%s", resp.Status, resp.Request.URL, page)
	}
	return loc
}

func random(t *testing.T) []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func strs(v any) []string {
	list, _ := v.([]any)
	out := []string{}
	for _, s := range list {
		if str, ok := s.(string); ok {
			out = append(out, str)
		}
	}
	return out
}
