package oauth

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/oauth2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	configlisters "sealion.dev/core/generated/supervisor/listers/config/v1alpha1"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/connectors/oidcidp"
	"sealion.dev/servers/supervisor/internal/discovery"
	"sealion.dev/servers/supervisor/internal/idtransform"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
	"sealion.dev/servers/supervisor/internal/oauth/sessions/sessionstest"
	"sealion.dev/servers/supervisor/internal/signingkeys"
	"sealion.dev/servers/supervisor/internal/tokenseal"
)

const (
	namespace   = "supervisor"
	idpName     = "my-oidc"
	cliCallback = "http://127.0.0.1:12345/callback"
)

// harness is a Supervisor serving one issuer (its OAuth endpoints and discovery) whose only
// identity provider is a fakeUpstream, and a browser that stops at the CLI's loopback redirect.
type harness struct {
	t         testing.TB
	ctx       context.Context
	upstream  *fakeUpstream
	clientset *fake.Clientset
	server    *httptest.Server
	issuerURL string
	jwks      *signingkeys.JWKS
	browser   *http.Client
	endpoints *Endpoints
	// keys seal the upstream tokens of the stored sessions, as every replica's do.
	keys *tokenseal.Ring
	// oidcClients and clientSecrets are the informer caches of the OIDCClients and their
	// storage Secrets (see addOIDCClient).
	oidcClients, clientSecrets cache.Indexer
	// auditLog holds the endpoints' audit events, personal information redacted.
	auditLog *auditLog
	// csrfKey signs the browser's CSRF cookie.
	csrfKey []byte
	// mux serves iss, the one issuer (see serveAgain).
	mux *issuer.Mux
	iss *issuer.Issuer
}

func newHarness(t testing.TB, transforms *idtransform.Pipeline) *harness {
	return newHarnessWith(t, nil, issuer.IdentityProvider{
		DisplayName: idpName, Type: issuer.TypeOIDC, Flows: []issuer.Flow{issuer.FlowBrowserAuthcode},
		Kind: "OIDCIdentityProvider", Name: "upstream-idp", UID: "idp-uid", Transforms: transforms,
	})
}

// newHarnessWith serves an issuer with idps, whose upstreams are the fakeUpstream (for the
// OIDCIdentityProvider upstream-idp) and those of ups.
func newHarnessWith(t testing.TB, ups *fakeUpstreams, idps ...issuer.IdentityProvider) *harness {
	h := &harness{t: t, ctx: context.Background(), upstream: newFakeUpstream(t), clientset: sessionstest.OptimisticClientset(),
		oidcClients:   cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		clientSecrets: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}
	data, err := signingkeys.NewJWKS()
	if err != nil {
		t.Fatal(err)
	}
	if h.jwks, err = signingkeys.ParseJWKS(data); err != nil {
		t.Fatal(err)
	}
	if ups == nil {
		ups = &fakeUpstreams{}
	}
	ups.add(issuer.TypeOIDC, "upstream-idp", oidcidp.New(oidcidp.Config{IssuerURL: h.upstream.server.URL, ClientID: "upstream-client", ClientSecret: "upstream-secret",
		UsernameClaim: "email", GroupsClaim: "groups", HTTPClient: h.upstream.client(),
		AuthorizeParameters: map[string]string{"acr_values": "phr"}, AdditionalClaims: map[string]string{"upstreamEmail": "email", "absent": "no-such-claim"}}))
	h.keys = sessionstest.Keys()
	h.endpoints = New(sessions.NewStorage(h.clientset.CoreV1().Secrets(namespace), ups, h.keys), ups).WithClients(&provider.OIDCClients{
		Clients:       configlisters.NewOIDCClientLister(h.oidcClients).OIDCClients(namespace),
		Secrets:       corev1listers.NewSecretLister(h.clientSecrets).Secrets(namespace),
		MinBcryptCost: bcrypt.MinCost,
	})
	h.auditLog = &auditLog{}
	h.endpoints.WithAudit(audit.New(h.auditLog, false))
	mux := issuer.NewMux(discovery.Endpoints{}, h.endpoints)
	h.server = httptest.NewTLSServer(mux)
	t.Cleanup(h.server.Close)
	h.issuerURL = h.server.URL + "/fd"
	h.csrfKey = randomKey(t)
	h.mux, h.iss = mux, &issuer.Issuer{
		URL: h.issuerURL, Namespace: namespace, Name: "fd", UID: "fd-uid", JWKS: h.jwks,
		TokenSigningKey: randomKey(t), StateSigningKey: randomKey(t), StateEncryptionKey: randomKey(t), CSRFKey: h.csrfKey,
		IdentityProviders: idps,
	}
	h.serveAgain(func(*issuer.Issuer) {})
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	h.browser = &http.Client{
		Jar: jar, Transport: h.server.Client().Transport,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if req.URL.Scheme == "http" {
				return http.ErrUseLastResponse // the CLI's loopback listener
			}
			return nil
		},
	}
	return h
}

// serveAgain serves the issuer again after change changed it, as the FederationDomain controller
// does when the FederationDomain changes; what is stored stays.
func (h *harness) serveAgain(change func(*issuer.Issuer)) {
	h.t.Helper()
	change(h.iss)
	if err := h.mux.Set([]*issuer.Issuer{h.iss}); err != nil {
		h.t.Fatal(err)
	}
}

func randomKey(t testing.TB) []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// cli is the pinniped CLI's OAuth client.
func (h *harness) cli() *oauth2.Config {
	return &oauth2.Config{
		ClientID:    provider.PinnipedCLIClientID,
		Endpoint:    oauth2.Endpoint{AuthURL: h.issuerURL + provider.AuthorizePath, TokenURL: h.issuerURL + provider.TokenPath, AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: cliCallback,
		Scopes:      []string{provider.ScopeOpenID, provider.ScopeOfflineAccess, provider.ScopeRequestAudience, provider.ScopeUsername, provider.ScopeGroups},
	}
}

func (h *harness) clientContext() context.Context {
	return context.WithValue(h.ctx, oauth2.HTTPClient, h.server.Client())
}

// authorize runs the browser part of a login and returns where it ended: the CLI's callback
// URL, or the last response when the flow stopped elsewhere.
func (h *harness) authorize(authURL string) (*url.URL, *http.Response) {
	h.t.Helper()
	resp, err := h.browser.Get(authURL)
	if err != nil {
		h.t.Fatalf("browser: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if loc, err := resp.Location(); err == nil && strings.HasPrefix(loc.String(), "http://127.0.0.1:12345/") {
		return loc, resp
	}
	return nil, resp
}

type login struct {
	verifier, nonce, state string
	code                   string
}

// login logs in and returns the authorization code the CLI received.
func (h *harness) login(extra ...oauth2.AuthCodeOption) login {
	h.t.Helper()
	l := login{verifier: oauth2.GenerateVerifier(), nonce: rand.Text(), state: rand.Text()}
	opts := append([]oauth2.AuthCodeOption{oidc.Nonce(l.nonce), oauth2.S256ChallengeOption(l.verifier), oauth2.SetAuthURLParam("pinniped_idp_name", idpName)}, extra...)
	loc, resp := h.authorize(h.cli().AuthCodeURL(l.state, opts...))
	if loc == nil {
		h.t.Fatalf("login did not reach the CLI: %s", resp.Status)
	}
	if loc.Query().Get("state") != l.state || loc.Query().Get("code") == "" {
		h.t.Fatalf("CLI callback %s: want code and state %q", loc, l.state)
	}
	l.code = loc.Query().Get("code")
	return l
}

// idToken verifies an ID token of the issuer for audience and returns its claims.
func (h *harness) idToken(raw, audience string) (*oidc.IDToken, map[string]any) {
	h.t.Helper()
	keys := &oidc.StaticKeySet{PublicKeys: []crypto.PublicKey{h.jwks.Public.Keys[0].Key}}
	tok, err := oidc.NewVerifier(h.issuerURL, keys, &oidc.Config{ClientID: audience, SupportedSigningAlgs: []string{"ES256"}}).Verify(h.ctx, raw)
	if err != nil {
		h.t.Fatalf("verifying ID token: %v", err)
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		h.t.Fatal(err)
	}
	return tok, claims
}

// exchange POSTs an RFC 8693 token exchange.
func (h *harness) exchange(subjectToken, audience string) (int, map[string]any) {
	h.t.Helper()
	resp, err := h.server.Client().PostForm(h.issuerURL+provider.TokenPath, url.Values{
		"grant_type": {provider.GrantTokenExchange}, "client_id": {provider.PinnipedCLIClientID}, "audience": {audience},
		"subject_token": {subjectToken}, "subject_token_type": {tokenTypeAccessToken}, "requested_token_type": {tokenTypeJWT},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		h.t.Fatal(err)
	}
	return resp.StatusCode, body
}

func (h *harness) storedTypes() map[string]int {
	secrets, err := h.clientset.CoreV1().Secrets(namespace).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	counts := map[string]int{}
	for _, s := range secrets.Items {
		kind := s.Labels[sessions.TypeLabel]
		// A device authorization belongs to no login yet: it has no request ID.
		if s.Type != sessions.SecretType(kind) || !strings.HasPrefix(s.Name, "pinniped-storage-"+kind+"-") || (s.Labels[sessions.RequestIDLabel] == "" && kind != "device") {
			h.t.Errorf("Secret %s: type %s, labels %v", s.Name, s.Type, s.Labels)
		}
		gc, err := time.Parse(time.RFC3339, s.Annotations[sessions.GarbageCollectAfterAnnotation])
		if err != nil || gc.Before(time.Now()) {
			h.t.Errorf("Secret %s: bad %s annotation %q", s.Name, sessions.GarbageCollectAfterAnnotation, s.Annotations[sessions.GarbageCollectAfterAnnotation])
		}
		counts[kind]++
	}
	return counts
}

func TestLoginRefreshAndTokenExchange(t *testing.T) {
	h := newHarness(t, nil)
	l := h.login()
	if got := h.storedTypes(); got[typeAuthcode] != 1 || got[typePKCE] != 1 || got[typeOIDC] != 1 {
		t.Errorf("after login, stored %v; want one authcode, pkce and oidc session", got)
	}

	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatalf("redeeming the code: %v", err)
	}
	idt, claims := h.idToken(tok.Extra("id_token").(string), provider.PinnipedCLIClientID)
	wantSub := h.upstream.server.URL + "?idpName=" + idpName + "&sub=upstream-subject"
	if idt.Subject != wantSub || idt.Nonce != l.nonce || claims["username"] != "pinny@example.com" ||
		!slices.Equal(toStrings(claims["groups"]), []string{"seals", "walruses"}) {
		t.Errorf("ID token: sub %q nonce %q claims %v; want sub %q and the upstream identity", idt.Subject, idt.Nonce, claims, wantSub)
	}
	// additionalAuthorizeParameters reach the upstream; additionalClaimMappings copy its claims.
	if got := h.upstream.lastAuthorize.Get("acr_values"); got != "phr" {
		t.Errorf("the upstream authorize request has acr_values %q, want phr", got)
	}
	if got, ok := claims[sessions.AdditionalClaimsClaim].(map[string]any); !ok || len(got) != 1 || got["upstreamEmail"] != "pinny@example.com" {
		t.Errorf("additionalClaims %v, want only upstreamEmail", claims[sessions.AdditionalClaimsClaim])
	}
	if life := idt.Expiry.Sub(idt.IssuedAt); life != provider.IDTokenLifetime {
		t.Errorf("ID token lifetime %v, want %v", life, provider.IDTokenLifetime)
	}
	if hdr := idTokenKeyID(t, tok.Extra("id_token").(string)); hdr != signingkeys.KeyID {
		t.Errorf("ID token kid %q, want %q", hdr, signingkeys.KeyID)
	}
	if d := time.Until(tok.Expiry); d > sessions.AccessTokenLifetime || d < sessions.AccessTokenLifetime-10*time.Second {
		t.Errorf("access token expires in %v, want %v", d, sessions.AccessTokenLifetime)
	}
	if tok.RefreshToken == "" {
		t.Fatal("no refresh token although offline_access was requested")
	}

	// As upstream: azp names the client, rat and auth_time are the login's, each token has a jti.
	checkLoginClaims := func(what string, c map[string]any) {
		t.Helper()
		if c["azp"] != provider.PinnipedCLIClientID || c["rat"] == nil || c["rat"] != claims["rat"] ||
			c["auth_time"] != claims["auth_time"] || c["jti"] == nil || c["jti"] == "" {
			t.Errorf("%s: azp %v, rat %v, auth_time %v, jti %v; want azp %s and the login's rat %v and auth_time %v",
				what, c["azp"], c["rat"], c["auth_time"], c["jti"], provider.PinnipedCLIClientID, claims["rat"], claims["auth_time"])
		}
	}
	checkLoginClaims("ID token", claims)

	// Token exchange for a cluster audience.
	status, body := h.exchange(tok.AccessToken, "cluster-1")
	if status != http.StatusOK || body["issued_token_type"] != tokenTypeJWT {
		t.Fatalf("token exchange: %d %v", status, body)
	}
	_, exClaims := h.idToken(body["access_token"].(string), "cluster-1")
	if exClaims["sub"] != wantSub || exClaims["username"] != "pinny@example.com" || exClaims["azp"] != provider.PinnipedCLIClientID ||
		fmt.Sprint(exClaims[sessions.AdditionalClaimsClaim]) != "map[upstreamEmail:pinny@example.com]" {
		t.Errorf("exchanged token claims %v", exClaims)
	}
	checkLoginClaims("exchanged token", exClaims)

	// A refresh re-checks the upstream, picks up new groups and rotates the refresh token.
	h.upstream.mu.Lock()
	h.upstream.groups = []string{"seals"}
	h.upstream.mu.Unlock()
	refreshed, err := h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	_, rClaims := h.idToken(refreshed.Extra("id_token").(string), provider.PinnipedCLIClientID)
	if !slices.Equal(toStrings(rClaims["groups"]), []string{"seals"}) || rClaims["sub"] != wantSub {
		t.Errorf("refreshed ID token claims %v; want the new upstream groups", rClaims)
	}
	checkLoginClaims("refreshed ID token", rClaims)
	if h.upstream.refreshes != 1 {
		t.Errorf("upstream saw %d refreshes, want 1", h.upstream.refreshes)
	}
	// (Using the old refresh token again ends the login: TestRefreshTokenReuseRevokesTheLogin.)
	if status, _ := h.exchange(tok.AccessToken, "cluster-1"); status == http.StatusOK {
		t.Error("the access token of the rotated refresh token still works")
	}
	if got := h.storedTypes(); got[typeRefreshToken] != 2 || got[typeAccessToken] != 1 {
		t.Errorf("after refresh, stored %v; want one access token and two refresh tokens, the new one and the retired one", got)
	}

	// When the upstream refuses, so does the Supervisor.
	h.upstream.mu.Lock()
	h.upstream.refuseRefresh = true
	h.upstream.mu.Unlock()
	_, err = h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: refreshed.RefreshToken}).Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" || !strings.Contains(re.ErrorDescription, "Upstream refresh failed") {
		t.Errorf("refresh after the upstream refused: %v; want invalid_grant", err)
	}

	// Replaying the authorization code fails and revokes every token issued for it.
	if _, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier)); err == nil {
		t.Error("an authorization code was redeemed twice")
	}
	if got := h.storedTypes(); got[typeRefreshToken] != 0 || got[typeAccessToken] != 0 {
		t.Errorf("after the code was replayed, stored %v; want no access or refresh tokens", got)
	}
}

func idTokenKeyID(t *testing.T, raw string) string {
	header, _, _ := strings.Cut(raw, ".")
	b, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		t.Fatal(err)
	}
	var h struct{ Kid string }
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h.Kid
}

func toStrings(v any) []string {
	list, _ := v.([]any)
	out := []string{}
	for _, s := range list {
		str, _ := s.(string)
		out = append(out, str)
	}
	return out
}

func TestAuthorizeRejects(t *testing.T) {
	h := newHarness(t, nil)
	verifier := oauth2.GenerateVerifier()
	tests := []struct {
		name      string
		cfg       func(*oauth2.Config)
		opts      []oauth2.AuthCodeOption
		wantError string
	}{
		{name: "no PKCE", opts: []oauth2.AuthCodeOption{oidc.Nonce(rand.Text())}, wantError: "invalid_request"},
		{name: "plain PKCE", opts: []oauth2.AuthCodeOption{
			oauth2.SetAuthURLParam("code_challenge", verifier), oauth2.SetAuthURLParam("code_challenge_method", "plain"),
		}, wantError: "invalid_request"},
		{name: "prompt none", opts: []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("prompt", "none")}, wantError: "login_required"},
		{name: "unknown identity provider", opts: []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("pinniped_idp_name", "nope")}, wantError: "invalid_request"},
		{name: "unknown scope", cfg: func(c *oauth2.Config) { c.Scopes = append(c.Scopes, "admin") }, opts: []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}, wantError: "invalid_scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := h.cli()
			if tt.cfg != nil {
				tt.cfg(cfg)
			}
			loc, resp := h.authorize(cfg.AuthCodeURL("some-state-value", tt.opts...))
			if loc == nil || loc.Query().Get("error") != tt.wantError || loc.Query().Get("code") != "" {
				t.Errorf("got %v (%s), want a redirect to the CLI with error %s", loc, resp.Status, tt.wantError)
			}
		})
	}

	t.Run("foreign redirect URI", func(t *testing.T) {
		cfg := h.cli()
		cfg.RedirectURL = "https://evil.example.com/callback"
		loc, resp := h.authorize(cfg.AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(verifier)))
		if loc != nil || resp.StatusCode < 400 {
			t.Errorf("got %v (%s); want an error page, never a redirect", loc, resp.Status)
		}
	})
	if got := h.storedTypes(); len(got) != 0 {
		t.Errorf("failed authorize requests stored %v", got)
	}
}

func TestCallbackRejectsForeignState(t *testing.T) {
	h := newHarness(t, nil)
	for name, state := range map[string]string{"garbage": "not-a-state", "empty": ""} {
		resp, err := h.browser.Get(h.issuerURL + provider.CallbackPath + "?code=x&state=" + url.QueryEscape(state))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s state: %s, want 400", name, resp.Status)
		}
	}

	// A state from another browser (no CSRF cookie) is refused.
	l := login{verifier: oauth2.GenerateVerifier()}
	noFollow := &http.Client{Transport: h.browser.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(h.cli().AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(l.verifier)))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	upstreamURL, err := resp.Location()
	if err != nil {
		t.Fatalf("authorize did not redirect upstream: %s", resp.Status)
	}
	resp, err = noFollow.Get(h.issuerURL + provider.CallbackPath + "?code=x&state=" + url.QueryEscape(upstreamURL.Query().Get("state")))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("callback without the CSRF cookie: %s, want 403", resp.Status)
	}
}

// The CSRF cookie is signed with the Supervisor's CSRF key; one signed otherwise is refused.
func TestCSRFCookieIsSigned(t *testing.T) {
	h := newHarness(t, nil)
	noFollow := &http.Client{Jar: h.browser.Jar, Transport: h.browser.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(h.cli().AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	upstreamURL, err := resp.Location()
	if err != nil {
		t.Fatalf("authorize did not redirect upstream: %s", resp.Status)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "__Host-pinniped-csrf-v2" {
			cookie = c
		}
	}
	sign := func(key []byte, csrf string) string {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(csrf))
		return csrf + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	}
	if cookie == nil {
		t.Fatal("authorize set no CSRF cookie")
	}
	csrf, _, _ := strings.Cut(cookie.Value, ".")
	if csrf == "" || cookie.Value != sign(h.csrfKey, csrf) {
		t.Fatalf("CSRF cookie %v, want a value signed with the CSRF key", cookie)
	}
	for name, value := range map[string]string{"unsigned": csrf, "signed with another key": sign(randomKey(t), csrf)} {
		req, err := http.NewRequest(http.MethodGet, h.issuerURL+provider.CallbackPath+"?code=x&state="+url.QueryEscape(upstreamURL.Query().Get("state")), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.AddCookie(&http.Cookie{Name: cookie.Name, Value: value})
		resp, err := h.server.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("callback with a CSRF cookie %s: %s, want 403", name, resp.Status)
		}
	}
}

func TestTransformsRejectLogin(t *testing.T) {
	pipeline, err := idtransform.Compile(configv1alpha1.FederationDomainTransforms{
		Expressions: []configv1alpha1.FederationDomainTransformsExpression{
			{Type: "username/v1", Expression: `"idp:" + username`},
			{Type: "policy/v1", Expression: `!("walruses" in groups)`, Message: "no walruses"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, pipeline)
	loc, resp := h.authorize(h.cli().AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oidc.Nonce(rand.Text())))
	if loc == nil || loc.Query().Get("error") != "access_denied" || !strings.Contains(loc.Query().Get("error_description"), "no walruses") {
		t.Fatalf("got %v (%s); want access_denied with the policy's message", loc, resp.Status)
	}

	h.upstream.mu.Lock()
	h.upstream.groups = []string{"seals"}
	h.upstream.mu.Unlock()
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	if _, claims := h.idToken(tok.Extra("id_token").(string), provider.PinnipedCLIClientID); claims["username"] != "idp:pinny@example.com" {
		t.Errorf("username %v, want the transformed one", claims["username"])
	}

	// The policy runs again at refresh time.
	h.upstream.mu.Lock()
	h.upstream.groups = []string{"walruses"}
	h.upstream.mu.Unlock()
	_, err = h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err == nil || !strings.Contains(err.Error(), "no walruses") {
		t.Errorf("refresh of a user the policy now rejects: %v", err)
	}
}

func TestTokenExchangeRejects(t *testing.T) {
	h := newHarness(t, nil)
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	// Each refusal as upstream's: status, error and hint, checked in upstream's order.
	valid := url.Values{"grant_type": {provider.GrantTokenExchange}, "client_id": {provider.PinnipedCLIClientID}, "audience": {"cluster-1"},
		"subject_token": {tok.AccessToken}, "subject_token_type": {tokenTypeAccessToken}, "requested_token_type": {tokenTypeJWT}}
	badRequest := func(hint string) exchangeRefusal {
		return exchangeRefusal{http.StatusBadRequest, "invalid_request", hint}
	}
	for name, tt := range map[string]struct {
		change func(url.Values)
		want   exchangeRefusal
	}{
		"no audience":                        {func(f url.Values) { f.Del("audience") }, badRequest("Missing 'audience' parameter.")},
		"neither audience nor subject token": {func(f url.Values) { f.Del("subject_token"); f.Set("audience", "") }, badRequest("Missing 'audience' parameter.")},
		"empty subject token": {func(f url.Values) { f.Set("subject_token", "") },
			badRequest("Missing 'subject_token' parameter.")},
		"subject token type": {func(f url.Values) { f.Set("subject_token_type", tokenTypeJWT) },
			badRequest(`Unsupported 'subject_token_type' parameter value, must be "urn:ietf:params:oauth:token-type:access_token".`)},
		"requested token type": {func(f url.Values) { f.Set("requested_token_type", tokenTypeAccessToken) },
			badRequest(`Unsupported 'requested_token_type' parameter value, must be "urn:ietf:params:oauth:token-type:jwt".`)},
		"resource":         {func(f url.Values) { f.Set("resource", "https://x") }, badRequest(`Unsupported parameter "resource".`)},
		"scope":            {func(f url.Values) { f.Set("scope", "openid") }, badRequest(`Unsupported parameter "scope".`)},
		"actor token":      {func(f url.Values) { f.Set("actor_token", "x") }, badRequest(`Unsupported parameter "actor_token".`)},
		"actor token type": {func(f url.Values) { f.Set("actor_token_type", "x") }, badRequest(`Unsupported parameter "actor_token_type".`)},
		"pinniped.dev audience": {func(f url.Values) { f.Set("audience", "x.pinniped.dev") },
			badRequest("requested audience cannot contain '.pinniped.dev'")},
		"OIDCClient audience": {func(f url.Values) { f.Set("audience", "client.oauth.pinniped.dev-foo") },
			badRequest("requested audience cannot contain '.pinniped.dev'")},
		"pinniped-cli audience": {func(f url.Values) { f.Set("audience", "pinniped-cli") },
			badRequest("requested audience cannot equal 'pinniped-cli'")},
		"made-up subject token": {func(f url.Values) { f.Set("subject_token", "not-a-token") },
			exchangeRefusal{http.StatusUnauthorized, "request_unauthorized", "Invalid 'subject_token' parameter value."}},
	} {
		form := url.Values{}
		for k, v := range valid {
			form[k] = slices.Clone(v)
		}
		tt.change(form)
		status, body := h.postToken(form, "", "")
		tt.want.check(t, name, status, body)
	}

	// Without pinniped:request-audience the access token cannot be exchanged.
	cfg := h.cli()
	cfg.Scopes = []string{provider.ScopeOpenID, provider.ScopeUsername, provider.ScopeGroups}
	l = login{verifier: oauth2.GenerateVerifier(), state: rand.Text()}
	loc, resp := h.authorize(cfg.AuthCodeURL(l.state, oauth2.S256ChallengeOption(l.verifier)))
	if loc == nil {
		t.Fatalf("login: %s", resp.Status)
	}
	tok, err = cfg.Exchange(h.clientContext(), loc.Query().Get("code"), oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	if tok.RefreshToken != "" {
		t.Error("a refresh token was issued without offline_access")
	}
	status, body := h.exchange(tok.AccessToken, "cluster-1")
	exchangeRefusal{http.StatusForbidden, "access_denied", `Missing the "pinniped:request-audience" scope.`}.check(t, "without "+provider.ScopeRequestAudience, status, body)
}

// exchangeRefusal is the error answer to a token exchange: its status, error code and the hint
// that ends its description.
type exchangeRefusal struct {
	status      int
	error, hint string
}

func (want exchangeRefusal) check(t *testing.T, what string, status int, body map[string]any) {
	t.Helper()
	desc, _ := body["error_description"].(string)
	// fosite, upstream's too, writes the double quotes of descriptions as single quotes.
	if status != want.status || body["error"] != want.error || !strings.HasSuffix(desc, " "+strings.ReplaceAll(want.hint, `"`, "'")) {
		t.Errorf("%s: %d %v; want %d %s ending %q", what, status, body, want.status, want.error, want.hint)
	}
}

// A pinniped CLI from before the username and groups scopes asks for neither; Pinniped grants
// both to pinniped-cli anyway, so that its tokens carry what the Concierge needs: so does the
// Supervisor, in the token response's scope and in every token's claims.
func TestPinnipedCLIIsGrantedUsernameAndGroupsUnasked(t *testing.T) {
	h := newHarness(t, nil)
	old := h.cli()
	old.Scopes = []string{provider.ScopeOpenID, provider.ScopeOfflineAccess, provider.ScopeRequestAudience}
	l := login{verifier: oauth2.GenerateVerifier(), nonce: rand.Text(), state: rand.Text()}
	loc, resp := h.authorize(old.AuthCodeURL(l.state, oidc.Nonce(l.nonce), oauth2.S256ChallengeOption(l.verifier), oauth2.SetAuthURLParam("pinniped_idp_name", idpName)))
	if loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("login did not reach the CLI: %s", resp.Status)
	}
	if got := strings.Fields(loc.Query().Get("scope")); !slices.Contains(got, provider.ScopeUsername) || !slices.Contains(got, provider.ScopeGroups) {
		t.Errorf("the authorization response grants %q; want username and groups too", got)
	}
	tok, err := old.Exchange(h.clientContext(), loc.Query().Get("code"), oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(fmt.Sprint(tok.Extra("scope"))); !slices.Contains(got, provider.ScopeUsername) || !slices.Contains(got, provider.ScopeGroups) {
		t.Errorf("the token response grants %q; want username and groups too", got)
	}
	_, claims := h.idToken(tok.Extra("id_token").(string), provider.PinnipedCLIClientID)
	if claims["username"] != "pinny@example.com" || !slices.Equal(toStrings(claims["groups"]), []string{"seals", "walruses"}) {
		t.Errorf("ID token claims %v; want username and groups", claims)
	}
	status, body := h.exchange(tok.AccessToken, "cluster-1")
	if status != http.StatusOK {
		t.Fatalf("token exchange: %d %v", status, body)
	}
	if _, ex := h.idToken(body["access_token"].(string), "cluster-1"); ex["username"] != "pinny@example.com" || !slices.Equal(toStrings(ex["groups"]), []string{"seals", "walruses"}) {
		t.Errorf("the cluster's token claims %v; want username and groups", ex)
	}
}
