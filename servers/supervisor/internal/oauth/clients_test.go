package oauth

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/oauth2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

const (
	clientID       = configv1alpha1.OIDCClientNamePrefix + "webapp"
	clientSecret   = "the-current-client-secret"
	clientCallback = "http://127.0.0.1:12345/webapp/callback"
)

// fullSpec allows every grant type and scope.
func fullSpec() configv1alpha1.OIDCClientSpec {
	return configv1alpha1.OIDCClientSpec{
		AllowedRedirectURIs: []configv1alpha1.RedirectURI{"http://127.0.0.1/webapp/callback", "https://webapp.example.com/callback"},
		AllowedGrantTypes:   []configv1alpha1.GrantType{configv1alpha1.GrantTypeAuthorizationCode, configv1alpha1.GrantTypeRefreshToken, configv1alpha1.GrantTypeTokenExchange},
		AllowedScopes: []configv1alpha1.Scope{configv1alpha1.ScopeOpenID, configv1alpha1.ScopeOfflineAccess, configv1alpha1.ScopeUsername,
			configv1alpha1.ScopeGroups, configv1alpha1.ScopeRequestAudience},
	}
}

// addOIDCClient puts an OIDCClient and the hashes of secrets (newest first) in the informer
// caches; no storage Secret when secrets is empty. Adding a client again replaces it.
func (h *harness) addOIDCClient(name string, spec configv1alpha1.OIDCClientSpec, secrets ...string) {
	h.t.Helper()
	uid := types.UID("uid-" + name)
	client := &configv1alpha1.OIDCClient{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: uid, Generation: 1}, Spec: spec}
	if err := h.oidcClients.Add(client); err != nil {
		h.t.Fatal(err)
	}
	if len(secrets) == 0 {
		return
	}
	hashes := make([]string, len(secrets))
	for i, s := range secrets {
		b, err := bcrypt.GenerateFromPassword([]byte(s), bcrypt.MinCost)
		if err != nil {
			h.t.Fatal(err)
		}
		hashes[i] = string(b)
	}
	// The storage Secret is written in its real format, then handed to the cache.
	store := &clientsecrets.Store{Secrets: fake.NewClientset().CoreV1().Secrets(namespace)}
	rec, err := store.Load(h.ctx, uid)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := store.Save(h.ctx, clientsecrets.Owner{APIVersion: "config.supervisor.pinniped.dev/v1alpha1", Name: name, UID: uid}, rec, hashes); err != nil {
		h.t.Fatal(err)
	}
	secret, err := store.Secrets.Get(h.ctx, clientsecrets.SecretName(uid), metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.clientSecrets.Add(secret); err != nil {
		h.t.Fatal(err)
	}
}

// webapp is the OAuth configuration of the confidential client clientID.
func (h *harness) webapp(scopes ...string) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     clientID,
		ClientSecret: clientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: h.issuerURL + provider.AuthorizePath, TokenURL: h.issuerURL + provider.TokenPath, AuthStyle: oauth2.AuthStyleInHeader},
		RedirectURL:  clientCallback,
		Scopes:       scopes,
	}
}

// loginAs logs in through cfg and returns the authorization code its redirect URI received.
func (h *harness) loginAs(cfg *oauth2.Config) login {
	h.t.Helper()
	l := login{verifier: oauth2.GenerateVerifier(), nonce: rand.Text(), state: rand.Text()}
	loc, resp := h.authorize(cfg.AuthCodeURL(l.state, oidc.Nonce(l.nonce), oauth2.S256ChallengeOption(l.verifier)))
	if loc == nil {
		h.t.Fatalf("login did not reach the client: %s", resp.Status)
	}
	if loc.Path != "/webapp/callback" || loc.Query().Get("state") != l.state || loc.Query().Get("code") == "" {
		h.t.Fatalf("client callback %s: want a code and state %q", loc, l.state)
	}
	l.code = loc.Query().Get("code")
	return l
}

// oauthError returns the OAuth error code of a failed token request.
func oauthError(t *testing.T, err error) string {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want an OAuth error response", err)
	}
	return re.ErrorCode
}

func TestOIDCClientLoginRefreshAndTokenExchange(t *testing.T) {
	h := newHarness(t, nil)
	h.addOIDCClient(clientID, fullSpec(), clientSecret, "an-older-client-secret")
	cfg := h.webapp(provider.ScopeOpenID, provider.ScopeOfflineAccess, provider.ScopeUsername, provider.ScopeGroups, provider.ScopeRequestAudience)
	l := h.loginAs(cfg)

	tok, err := cfg.Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatalf("redeeming the code with the client's secret: %v", err)
	}
	idt, claims := h.idToken(tok.Extra("id_token").(string), clientID)
	if !slices.Equal(idt.Audience, []string{clientID}) || idt.Nonce != l.nonce || claims["username"] != "pinny@example.com" ||
		!slices.Equal(toStrings(claims["groups"]), []string{"seals", "walruses"}) {
		t.Errorf("ID token: aud %v nonce %q claims %v; want the client ID as audience and the upstream identity", idt.Audience, idt.Nonce, claims)
	}

	// The client's older secret works too, and refreshes rotate the refresh token.
	older := *cfg
	older.ClientSecret = "an-older-client-secret"
	refreshed, err := older.TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if _, rClaims := h.idToken(refreshed.Extra("id_token").(string), clientID); rClaims["username"] != "pinny@example.com" {
		t.Errorf("refreshed ID token claims %v", rClaims)
	}

	// Token exchange needs the client's credentials, and the access token must be the client's own.
	form := url.Values{
		"grant_type": {provider.GrantTokenExchange}, "audience": {"cluster-1"}, "subject_token": {refreshed.AccessToken},
		"subject_token_type": {tokenTypeAccessToken}, "requested_token_type": {tokenTypeJWT},
	}
	status, body := h.postToken(form, clientID, clientSecret)
	if status != http.StatusOK {
		t.Fatalf("token exchange: %d %v", status, body)
	}
	if _, exClaims := h.idToken(body["access_token"].(string), "cluster-1"); exClaims["azp"] != clientID || exClaims["username"] != "pinny@example.com" {
		t.Errorf("exchanged token claims %v", exClaims)
	}
	if status, body := h.postToken(form, clientID, "wrong"); status != http.StatusUnauthorized || body["error"] != "invalid_client" {
		t.Errorf("token exchange with a wrong secret: %d %v", status, body)
	}
	if status, body := h.exchange(refreshed.AccessToken, "cluster-1"); status != http.StatusBadRequest {
		t.Errorf("pinniped-cli exchanged the OIDCClient's access token: %d %v", status, body)
	}
}

// postToken POSTs form to the token endpoint with HTTP basic client authentication, or without
// client authentication when id is empty.
func (h *harness) postToken(form url.Values, id, secret string) (int, map[string]any) {
	h.t.Helper()
	return h.postTo(provider.TokenPath, form, id, secret)
}

// postTo POSTs form to the endpoint at path as postToken does.
func (h *harness) postTo(path string, form url.Values, id, secret string) (int, map[string]any) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.issuerURL+path, strings.NewReader(form.Encode()))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id != "" {
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := h.server.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	var body map[string]any
	if len(raw) > 0 { // a revocation's success has no body
		if err := json.Unmarshal(raw, &body); err != nil {
			h.t.Fatalf("response %q: %v", raw, err)
		}
	}
	return resp.StatusCode, body
}

func TestOIDCClientAuthentication(t *testing.T) {
	h := newHarness(t, nil)
	h.addOIDCClient(clientID, fullSpec(), clientSecret)
	cfg := h.webapp(provider.ScopeOpenID)

	wrong := *cfg
	wrong.ClientSecret = "not-the-secret"
	l := h.loginAs(cfg)
	if _, err := wrong.Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier)); oauthError(t, err) != "invalid_client" {
		t.Errorf("wrong secret: %v, want invalid_client", err)
	}
	// Pinniped's clients authenticate with HTTP basic authentication only.
	post := *cfg
	post.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	if _, err := post.Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier)); oauthError(t, err) != "invalid_client" {
		t.Errorf("client_secret_post: %v, want invalid_client", err)
	}
	// Without a secret the client looks public, which it is not.
	public := *cfg
	public.ClientSecret = ""
	public.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	if _, err := public.Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier)); oauthError(t, err) != "invalid_client" {
		t.Errorf("no secret: %v, want invalid_client", err)
	}
	// The code is still good: failed client authentication does not consume it.
	if _, err := cfg.Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier)); err != nil {
		t.Errorf("redeeming the code with the right secret after failures: %v", err)
	}
}

func TestOIDCClientNotUsable(t *testing.T) {
	h := newHarness(t, nil)
	verifier := oauth2.GenerateVerifier()
	tests := []struct {
		name  string
		setup func()
	}{
		{name: "unknown client"},
		{name: "no client secrets", setup: func() { h.addOIDCClient(clientID, fullSpec()) }},
		{name: "invalid spec", setup: func() {
			spec := fullSpec()
			spec.AllowedGrantTypes = []configv1alpha1.GrantType{configv1alpha1.GrantTypeAuthorizationCode} // refresh_token is needed for offline_access
			h.addOIDCClient(clientID, spec, clientSecret)
		}},
		{name: "name without the prefix", setup: func() {
			h.addOIDCClient("webapp", fullSpec(), clientSecret)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
				t.Cleanup(func() {
					if err := errors.Join(h.oidcClients.Replace(nil, ""), h.clientSecrets.Replace(nil, "")); err != nil {
						t.Error(err)
					}
				})
			}
			for _, id := range []string{clientID, "webapp"} {
				cfg := h.webapp(provider.ScopeOpenID)
				cfg.ClientID = id
				loc, resp := h.authorize(cfg.AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(verifier)))
				if loc != nil || resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("authorize as %s: %v (%s); want an invalid_client error page, never a redirect", id, loc, resp.Status)
				}
				_, err := cfg.Exchange(h.clientContext(), "some-code", oauth2.VerifierOption(verifier))
				if code := oauthError(t, err); code != "invalid_client" {
					t.Errorf("token request as %s: %s, want invalid_client", id, code)
				}
			}
		})
	}
}

func TestOIDCClientRedirectURIs(t *testing.T) {
	h := newHarness(t, nil)
	h.addOIDCClient(clientID, fullSpec(), clientSecret)
	for _, redirect := range []string{cliCallback, "http://127.0.0.1:12345/webapp/callback/more", "http://localhost:12345/webapp/callback"} {
		cfg := h.webapp(provider.ScopeOpenID)
		cfg.RedirectURL = redirect
		loc, resp := h.authorize(cfg.AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		if loc != nil || resp.StatusCode < 400 {
			t.Errorf("redirect URI %s: %v (%s); want an error page, never a redirect", redirect, loc, resp.Status)
		}
	}
	// Any port of an allowed loopback redirect URI is fine.
	cfg := h.webapp(provider.ScopeOpenID)
	cfg.RedirectURL = "http://127.0.0.1:12345/webapp/callback"
	h.loginAs(cfg)
}

func TestOIDCClientGrantsAndScopes(t *testing.T) {
	h := newHarness(t, nil)
	h.addOIDCClient(clientID, fullSpec(), clientSecret)

	// username and groups are claimed only when granted.
	for _, tt := range []struct {
		scopes           []string
		username, groups bool
		wantRefreshToken bool
	}{
		{scopes: []string{provider.ScopeOpenID}},
		{scopes: []string{provider.ScopeOpenID, provider.ScopeUsername}, username: true},
		{scopes: []string{provider.ScopeOpenID, provider.ScopeGroups, provider.ScopeOfflineAccess}, groups: true, wantRefreshToken: true},
	} {
		cfg := h.webapp(tt.scopes...)
		l := h.loginAs(cfg)
		tok, err := cfg.Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
		if err != nil {
			t.Fatalf("scopes %v: %v", tt.scopes, err)
		}
		check := func(what, raw string) {
			_, claims := h.idToken(raw, clientID)
			_, hasUsername := claims["username"]
			_, hasGroups := claims["groups"]
			if hasUsername != tt.username || hasGroups != tt.groups {
				t.Errorf("scopes %v, %s ID token claims %v; want username %v, groups %v", tt.scopes, what, claims, tt.username, tt.groups)
			}
		}
		check("first", tok.Extra("id_token").(string))
		if (tok.RefreshToken != "") != tt.wantRefreshToken {
			t.Errorf("scopes %v: refresh token %q", tt.scopes, tok.RefreshToken)
		}
		if tok.RefreshToken != "" {
			refreshed, err := cfg.TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			if err != nil {
				t.Fatalf("refresh: %v", err)
			}
			check("refreshed", refreshed.Extra("id_token").(string))
		}
	}

	// A scope the client is not allowed is refused.
	narrow := fullSpec()
	narrow.AllowedGrantTypes = []configv1alpha1.GrantType{configv1alpha1.GrantTypeAuthorizationCode}
	narrow.AllowedScopes = []configv1alpha1.Scope{configv1alpha1.ScopeOpenID, configv1alpha1.ScopeUsername}
	cfg := h.webapp(provider.ScopeOpenID, provider.ScopeOfflineAccess, provider.ScopeUsername)
	l := h.loginAs(cfg)
	tok, err := cfg.Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil || tok.RefreshToken == "" {
		t.Fatalf("login with offline_access: %v", err)
	}
	h.addOIDCClient(clientID, narrow, clientSecret)
	loc, resp := h.authorize(cfg.AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if loc == nil || loc.Query().Get("error") != "invalid_scope" {
		t.Errorf("offline_access for a client not allowed it: %v (%s), want invalid_scope", loc, resp.Status)
	}
	// Once refresh_token is no longer allowed, the client's refresh tokens stop working.
	_, err = cfg.TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if code := oauthError(t, err); code != "unauthorized_client" {
		t.Errorf("refresh by a client not allowed refresh_token: %s, want unauthorized_client", code)
	}
	// Neither may it exchange tokens.
	status, body := h.postToken(url.Values{
		"grant_type": {provider.GrantTokenExchange}, "audience": {"cluster-1"}, "subject_token": {tok.AccessToken},
		"subject_token_type": {tokenTypeAccessToken}, "requested_token_type": {tokenTypeJWT},
	}, clientID, clientSecret)
	if status < 400 {
		t.Errorf("token exchange by a client not allowed it: %d %v", status, body)
	}
}

func TestOIDCClientIDTokenLifetime(t *testing.T) {
	h := newHarness(t, nil)
	spec := fullSpec()
	spec.TokenLifetimes.IDTokenSeconds = ptr.To[int32](1800)
	h.addOIDCClient(clientID, spec, clientSecret)
	cfg := h.webapp(provider.ScopeOpenID, provider.ScopeOfflineAccess)
	l := h.loginAs(cfg)
	tok, err := cfg.Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	idt, _ := h.idToken(tok.Extra("id_token").(string), clientID)
	if life := idt.Expiry.Sub(idt.IssuedAt); life != 30*time.Minute {
		t.Errorf("ID token lifetime %v, want the client's 30m", life)
	}
	refreshed, err := cfg.TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatal(err)
	}
	if idt, _ := h.idToken(refreshed.Extra("id_token").(string), clientID); idt.Expiry.Sub(idt.IssuedAt) != 30*time.Minute {
		t.Errorf("refreshed ID token lifetime %v, want the client's 30m", idt.Expiry.Sub(idt.IssuedAt))
	}
}

func TestOIDCClientCannotSendPasswords(t *testing.T) {
	h := newHarness(t, nil)
	h.addOIDCClient(clientID, fullSpec(), clientSecret)
	req, err := http.NewRequest(http.MethodGet, h.webapp(provider.ScopeOpenID).AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(usernameHeader, "pinny@example.com")
	req.Header.Set(passwordHeader, upstreamPassword)
	resp, err := h.browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	loc, _ := resp.Location()
	if loc == nil || loc.Query().Get("code") != "" || loc.Query().Get("error") == "" {
		t.Errorf("password headers from an OIDCClient: %s %v; want an error redirect", resp.Status, loc)
	}
}

// postTokenFrom is postToken from the local address source (any of 127.0.0.0/8 reaches the
// test server on Linux): a client elsewhere than the default 127.0.0.1.
func (h *harness) postTokenFrom(source string, form url.Values, id, secret string) (int, map[string]any) {
	h.t.Helper()
	transport := h.server.Client().Transport.(*http.Transport).Clone()
	transport.DialContext = (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}).DialContext
	defer transport.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, h.issuerURL+provider.TokenPath, strings.NewReader(form.Encode()))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	resp, err := (&http.Client{Transport: transport}).Do(req)
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

// A source that fails to authenticate a client again and again gets no new secret comparison
// for a while, even with the right secret; unknown client IDs count for nothing. The client
// itself, elsewhere, is never refused: the attack of SECURITY.md's second advisory.
func TestOIDCClientAuthenticationFailuresAreLimited(t *testing.T) {
	h := newHarness(t, nil)
	h.addOIDCClient(clientID, fullSpec(), clientSecret)
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"not-a-token"}}
	for range 50 {
		if status, body := h.postToken(form, "client.oauth.pinniped.dev-nobody", "x"); status != http.StatusUnauthorized || body["error"] != "invalid_client" {
			t.Fatalf("unknown client: %d %v", status, body)
		}
	}
	for i := range 10 {
		if status, body := h.postToken(form, clientID, "guess"); body["error"] != "invalid_client" {
			t.Fatalf("wrong secret, attempt %d: %d %v", i+1, status, body)
		}
	}
	status, body := h.postToken(form, clientID, clientSecret)
	if body["error"] != "invalid_client" || !strings.Contains(body["error_description"].(string), "Too many failed client authentications") {
		t.Errorf("right secret after 10 failures from the same source: %d %v; want invalid_client, too many failures", status, body)
	}
	// From another source the client authenticates (the made-up refresh token is what fails)...
	if status, body := h.postTokenFrom("127.0.0.2", form, clientID, clientSecret); body["error"] != "invalid_grant" {
		t.Errorf("right secret from another source: %d %v; want the client authenticated (invalid_grant for the token)", status, body)
	}
	// ...and once verified, its secret works from the blocked source too, without a comparison.
	if status, body := h.postToken(form, clientID, clientSecret); body["error"] != "invalid_grant" {
		t.Errorf("a verified secret from the blocked source: %d %v; want the client authenticated", status, body)
	}
	if status, body := h.postToken(form, clientID, "guess"); body["error"] != "invalid_client" ||
		!strings.Contains(body["error_description"].(string), "Too many failed client authentications") {
		t.Errorf("another guess from the blocked source: %d %v; still refused without a comparison", status, body)
	}
}

// An attacker who knows a client's ID keeps failing for ten minutes, from the first second, at
// the rate that would keep the client blocked were failures counted per client; the client
// redeems and refreshes every second of it, from its own address and from the attacker's.
func TestOIDCClientLockoutByAStranger(t *testing.T) {
	h := newHarness(t, nil)
	h.addOIDCClient(clientID, fullSpec(), clientSecret)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	h.endpoints.shared.ClientFailures = provider.NewClientFailures(func() time.Time { return now })
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"not-a-token"}}
	const attacker, client, seconds = "127.0.0.3", "127.0.0.4", 600
	for range 10 {
		h.postTokenFrom(attacker, form, clientID, "guess")
	}
	served, refused := 0, 0
	for second := range seconds {
		now = now.Add(time.Second)
		if second%6 == 0 {
			if _, body := h.postTokenFrom(attacker, form, clientID, "guess"); body["error"] != "invalid_client" {
				t.Fatalf("a guess was not refused: %v", body)
			}
		}
		if _, body := h.postTokenFrom(client, form, clientID, clientSecret); body["error"] == "invalid_grant" {
			served++
		}
		// Behind the same address as the attacker (a NAT), once the secret has been verified.
		if _, body := h.postTokenFrom(attacker, form, clientID, clientSecret); body["error"] != "invalid_grant" {
			refused++
		}
	}
	if served != seconds || refused != 0 {
		t.Errorf("the client authenticated in %d of %d seconds from its own address, and was refused %d times at the attacker's; want all and none", served, seconds, refused)
	}
	if !h.endpoints.shared.ClientFailures.Blocked(clientID, attacker) || h.endpoints.shared.ClientFailures.Blocked(clientID, client) {
		t.Error("want the attacker's source blocked and the client's not")
	}
}
