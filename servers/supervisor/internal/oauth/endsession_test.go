package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"
	"k8s.io/apimachinery/pkg/runtime"
	kubetesting "k8s.io/client-go/testing"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

const signedOut = "https://webapp.example.com/signed-out"

// logout sends a request to the end-session endpoint, the form in the query of a GET or the body
// of a POST, and returns the response, whose body the test has read, without following a redirect.
func (h *harness) logout(method string, form url.Values) (*http.Response, string) {
	h.t.Helper()
	u := h.issuerURL + provider.LogoutPath
	var body *strings.Reader
	if method == http.MethodPost {
		body = strings.NewReader(form.Encode())
	} else {
		u += "?" + form.Encode()
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		h.t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	client := *h.server.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, string(b)
}

// webappSession registers the webapp client with a post-logout redirect URI, logs in with it and
// returns its tokens.
func (h *harness) webappSession() *oauth2.Token {
	h.t.Helper()
	spec := fullSpec()
	spec.AllowedPostLogoutRedirectURIs = []configv1alpha1.RedirectURI{signedOut}
	h.addOIDCClient(clientID, spec, clientSecret)
	cfg := h.webapp("openid", "offline_access", "username", "groups", "pinniped:request-audience")
	l := h.loginAs(cfg)
	tok, err := cfg.Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

// A web application signs its user out by sending the browser to the end-session endpoint with
// its ID token: the session ends (its tokens refused, its records gone, its upstream refresh token
// revoked, an audit event), and the browser goes back to the registered URI with the state. The
// same request again finds nothing to end, and still goes back.
func TestLogoutEndsTheSession(t *testing.T) {
	h := newHarness(t, nil)
	tok := h.webappSession()
	upstream := h.upstream.upstreamTokens()
	idToken := tok.Extra("id_token").(string)

	for i, method := range []string{http.MethodGet, http.MethodPost} {
		resp, body := h.logout(method, url.Values{"id_token_hint": {idToken}, "post_logout_redirect_uri": {signedOut}, "state": {"st&te"}})
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != signedOut+"?state=st%26te" {
			t.Fatalf("%s logout: %s %s, Location %q; want a redirect to %s with the state", method, resp.Status, body, resp.Header.Get("Location"), signedOut)
		}
		if i > 0 {
			break
		}
		if _, err := h.refresh(h.webapp(), tok.RefreshToken); oauthError(t, err) != "invalid_grant" {
			t.Errorf("refresh after the logout: %v, want invalid_grant", err)
		}
		if got := h.storedTypes(); got[typeAccessToken] != 0 || got[typeRefreshToken] != 0 {
			t.Errorf("after the logout, stored %v; want no access or refresh token", got)
		}
		if got := h.upstream.revokedTokens(); len(got) != 1 || got[0] != upstream[0] {
			t.Errorf("upstream revoked %v, want the session's refresh token %v", got, upstream)
		}
	}
	if got := find(h.auditLog.events(t), "Session Ended By Logout"); len(got) != 1 || got[0]["clientID"] != clientID || got[0]["sessionID"] == "" {
		t.Errorf("audit events of the logout: %v, want one, naming the client and session", got)
	}
}

// Without a redirect URI the endpoint says so on a page of its own, with the security headers of
// the other pages; pinniped-cli's ID tokens work too.
func TestLogoutPage(t *testing.T) {
	h := newHarness(t, nil)
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	resp, body := h.logout(http.MethodGet, url.Values{"id_token_hint": {tok.Extra("id_token").(string)}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "You are signed out of "+h.issuerURL+".") ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("logout page: %s %v\n%s", resp.Status, resp.Header, body)
	}
	if _, err := h.refresh(h.cli(), tok.RefreshToken); oauthError(t, err) != "invalid_grant" {
		t.Errorf("refresh after the logout: %v, want invalid_grant", err)
	}
}

// forgedIDToken is an ID token like tok's, signed by a key of the attacker's.
func forgedIDToken(t *testing.T, claims map[string]any) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "pinniped-supervisor-jwk"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := josejwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Every way to end someone else's session, or to be sent somewhere unregistered, is refused, and
// the session goes on: ID tokens forged, altered, of another audience (a cluster's token), given
// twice or for another client_id; redirect URIs unregistered, differing in case or with
// something added, or with no client to check them against; methods other than GET and POST.
func TestLogoutRefusals(t *testing.T) {
	h := newHarness(t, nil)
	tok := h.webappSession()
	idToken := tok.Extra("id_token").(string)
	_, claims := h.idToken(idToken, clientID)
	dot := strings.LastIndex(idToken, ".")
	altered := idToken[:dot+1] + strings.Map(func(r rune) rune {
		if r == 'A' {
			return 'B'
		}
		return 'A'
	}, idToken[dot+1:dot+5]) + idToken[dot+5:]
	status, cluster := h.postToken(url.Values{"grant_type": {provider.GrantTokenExchange}, "audience": {"cluster-1"}, "subject_token": {tok.AccessToken},
		"subject_token_type": {tokenTypeAccessToken}, "requested_token_type": {tokenTypeJWT}}, clientID, clientSecret)
	if status != http.StatusOK {
		t.Fatalf("token exchange: %d %v", status, cluster)
	}
	for _, tc := range []struct {
		name   string
		method string
		form   url.Values
		status int
	}{
		{"a forged ID token", http.MethodGet, url.Values{"id_token_hint": {forgedIDToken(t, claims)}}, http.StatusBadRequest},
		{"an altered signature", http.MethodGet, url.Values{"id_token_hint": {altered}}, http.StatusBadRequest},
		{"not a token", http.MethodGet, url.Values{"id_token_hint": {"not.a.token"}}, http.StatusBadRequest},
		{"a cluster's token, of the same session", http.MethodGet, url.Values{"id_token_hint": {cluster["access_token"].(string)}}, http.StatusBadRequest},
		{"the hint twice", http.MethodGet, url.Values{"id_token_hint": {idToken, "x"}}, http.StatusBadRequest},
		{"another client_id", http.MethodGet, url.Values{"id_token_hint": {idToken}, "client_id": {provider.PinnipedCLIClientID}}, http.StatusBadRequest},
		{"an unregistered redirect", http.MethodGet, url.Values{"id_token_hint": {idToken}, "post_logout_redirect_uri": {"https://evil.example.com/"}}, http.StatusBadRequest},
		{"a redirect in another case", http.MethodGet, url.Values{"id_token_hint": {idToken}, "post_logout_redirect_uri": {strings.ToUpper(signedOut)}}, http.StatusBadRequest},
		{"a redirect with more", http.MethodGet, url.Values{"id_token_hint": {idToken}, "post_logout_redirect_uri": {signedOut + "/../x"}}, http.StatusBadRequest},
		{"a redirect without a client", http.MethodGet, url.Values{"post_logout_redirect_uri": {signedOut}}, http.StatusBadRequest},
		{"a redirect of the CLI, which has none", http.MethodGet, url.Values{"client_id": {provider.PinnipedCLIClientID}, "post_logout_redirect_uri": {"http://127.0.0.1/callback"}}, http.StatusBadRequest},
		{"PUT", http.MethodPut, url.Values{}, http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := h.logout(tc.method, tc.form)
			if resp.StatusCode != tc.status || resp.Header.Get("Location") != "" {
				t.Errorf("%s, Location %q; want %d and no redirect\n%s", resp.Status, resp.Header.Get("Location"), tc.status, body)
			}
		})
	}
	// A registered redirect with only the client's ID returns there and ends nothing.
	resp, body := h.logout(http.MethodGet, url.Values{"client_id": {clientID}, "post_logout_redirect_uri": {signedOut}})
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != signedOut {
		t.Errorf("client_id and a registered redirect: %s %s", resp.Status, body)
	}
	if _, err := h.refresh(h.webapp(), tok.RefreshToken); err != nil {
		t.Errorf("the session ended after refused logouts: %v", err)
	}
	if got := find(h.auditLog.events(t), "Session Ended By Logout"); len(got) != 0 {
		t.Errorf("audit events %v, want none", got)
	}
}

// A logout the storage cannot carry out now says so, and the session is intact.
func TestLogoutStorageFailure(t *testing.T) {
	h := newHarness(t, nil)
	tok := h.webappSession()
	h.clientset.PrependReactor("list", "secrets", func(kubetesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcdserver: request timed out")
	})
	resp, body := h.logout(http.MethodGet, url.Values{"id_token_hint": {tok.Extra("id_token").(string)}, "post_logout_redirect_uri": {signedOut}})
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Location") != "" || !strings.Contains(body, "try again later") {
		t.Errorf("logout while the storage fails: %s %s, want 503 and no redirect", resp.Status, body)
	}
}
