package oauth

import (
	"crypto/sha256"
	"encoding/base64"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// The claim sets of upstream's tokens, per grant (pinniped-v047-facts.md §9), before the claims
// of the username and groups scopes and additionalClaims. Pinniped's integration tests compare
// them exactly: no claim of ours may be added (the end-session endpoint finds a session from
// these).
var (
	authcodeClaims = []string{"iss", "sub", "aud", "exp", "iat", "auth_time", "rat", "jti", "nonce", "azp", "at_hash"}
	refreshClaims  = []string{"iss", "sub", "aud", "exp", "iat", "auth_time", "rat", "jti", "azp", "at_hash"}
	exchangeClaims = []string{"iss", "sub", "aud", "exp", "iat", "auth_time", "rat", "jti", "azp"}
)

// checkKeys fails unless m has exactly the keys want.
func checkKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	got := slices.Sorted(maps.Keys(m))
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s has the keys %v, want exactly %v", what, got, want)
	}
}

// atHash is the at_hash of an ES256-signed ID token issued with accessToken.
func atHash(accessToken string) string {
	sum := sha256.Sum256([]byte(accessToken))
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
}

// checkTiming fails unless the token was issued just now, lives for lifetime and carries the
// login's rat and auth_time.
func checkTiming(t *testing.T, what string, c map[string]any, lifetime time.Duration, loginTime float64) {
	t.Helper()
	iat, exp := c["iat"].(float64), c["exp"].(float64)
	if d := time.Since(time.Unix(int64(iat), 0)); d < -time.Second || d > 10*time.Second {
		t.Errorf("%s: iat is %v ago, want now", what, d)
	}
	if time.Duration(exp-iat)*time.Second != lifetime {
		t.Errorf("%s: lives %vs, want %v", what, exp-iat, lifetime)
	}
	if c["rat"] != loginTime || c["auth_time"] != loginTime {
		t.Errorf("%s: rat %v and auth_time %v, want the login's %v", what, c["rat"], c["auth_time"], loginTime)
	}
}

// The pinniped CLI's tokens carry exactly upstream's claims for each grant, and the token
// responses exactly upstream's fields plus our session_expires_in, which clients that do not know
// it ignore (RFC 6749 5.1).
func TestIDTokenClaimSetsPerGrant(t *testing.T) {
	h := newHarness(t, nil)
	wantSub := h.upstream.server.URL + "?idpName=" + idpName + "&sub=upstream-subject"
	identity := []string{"username", "groups", "additionalClaims"}
	l := h.login()

	status, body := h.postToken(url.Values{"grant_type": {"authorization_code"}, "code": {l.code}, "client_id": {provider.PinnipedCLIClientID},
		"redirect_uri": {cliCallback}, "code_verifier": {l.verifier}}, "", "")
	if status != 200 {
		t.Fatalf("redeeming the code: %d %v", status, body)
	}
	checkKeys(t, "the authorization code grant's response", body, "access_token", "expires_in", "id_token", "refresh_token", "scope", "token_type", "session_expires_in")
	// expires_in counts the access token's whole seconds left: 120 or, a second later, 119.
	if e := body["expires_in"]; (e != 120.0 && e != 119.0) || body["token_type"] != "bearer" || body["scope"] != "openid offline_access pinniped:request-audience username groups" {
		t.Errorf("authorization code grant response %v", body)
	}
	_, c := h.idToken(body["id_token"].(string), provider.PinnipedCLIClientID)
	checkKeys(t, "the ID token of the authorization code grant", c, append(authcodeClaims, identity...)...)
	loginTime := c["rat"].(float64)
	checkTiming(t, "the ID token of the authorization code grant", c, 2*time.Minute, loginTime)
	want := map[string]any{"iss": h.issuerURL, "sub": wantSub, "aud": []any{provider.PinnipedCLIClientID}, "nonce": l.nonce,
		"azp": provider.PinnipedCLIClientID, "at_hash": atHash(body["access_token"].(string)), "username": "pinny@example.com",
		"groups": []any{"seals", "walruses"}, "additionalClaims": map[string]any{"upstreamEmail": "pinny@example.com"}}
	for k, v := range want {
		if !reflect.DeepEqual(c[k], v) {
			t.Errorf("authorization code grant: %s is %#v, want %#v", k, c[k], v)
		}
	}
	loginJTI := c["jti"]

	// With no upstream groups, groups is an empty list rather than missing.
	h.upstream.mu.Lock()
	h.upstream.groups = nil
	h.upstream.mu.Unlock()
	status, body = h.postToken(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {body["refresh_token"].(string)},
		"client_id": {provider.PinnipedCLIClientID}}, "", "")
	if status != 200 {
		t.Fatalf("refresh: %d %v", status, body)
	}
	checkKeys(t, "the refresh grant's response", body, "access_token", "expires_in", "id_token", "refresh_token", "scope", "token_type", "session_expires_in")
	_, c = h.idToken(body["id_token"].(string), provider.PinnipedCLIClientID)
	checkKeys(t, "the ID token of the refresh grant", c, append(refreshClaims, identity...)...)
	checkTiming(t, "the ID token of the refresh grant", c, 2*time.Minute, loginTime)
	delete(want, "nonce")
	want["at_hash"], want["groups"] = atHash(body["access_token"].(string)), []any{}
	for k, v := range want {
		if !reflect.DeepEqual(c[k], v) {
			t.Errorf("refresh grant: %s is %#v, want %#v", k, c[k], v)
		}
	}
	if c["jti"] == loginJTI {
		t.Errorf("the refreshed ID token reuses the jti %v", loginJTI)
	}

	status, body = h.exchange(body["access_token"].(string), "cluster-1")
	if status != 200 {
		t.Fatalf("token exchange: %d %v", status, body)
	}
	checkKeys(t, "the token exchange response", body, "access_token", "issued_token_type", "token_type")
	if body["token_type"] != "N_A" || body["issued_token_type"] != tokenTypeJWT {
		t.Errorf("token exchange response %v", body)
	}
	_, c = h.idToken(body["access_token"].(string), "cluster-1")
	checkKeys(t, "the token of the token exchange", c, append(exchangeClaims, identity...)...)
	checkTiming(t, "the token of the token exchange", c, 2*time.Minute, loginTime)
	delete(want, "at_hash")
	want["aud"] = []any{"cluster-1"}
	for k, v := range want {
		if !reflect.DeepEqual(c[k], v) {
			t.Errorf("token exchange: %s is %#v, want %#v", k, c[k], v)
		}
	}
}

// An OIDCClient granted neither the username nor the groups scope gets neither claim, and its
// idTokenSeconds sets the lifetime of the ID tokens of logins and refreshes but not of exchanges.
func TestOIDCClientClaimSetsWithoutIdentityScopes(t *testing.T) {
	h := newHarness(t, nil)
	spec := fullSpec()
	spec.TokenLifetimes.IDTokenSeconds = ptr.To[int32](600)
	h.addOIDCClient(clientID, spec, clientSecret)
	cfg := h.webapp(provider.ScopeOpenID, provider.ScopeOfflineAccess, provider.ScopeRequestAudience)
	l := h.loginAs(cfg)

	status, body := h.postToken(url.Values{"grant_type": {"authorization_code"}, "code": {l.code}, "redirect_uri": {clientCallback},
		"code_verifier": {l.verifier}}, clientID, clientSecret)
	if status != 200 {
		t.Fatalf("redeeming the code: %d %v", status, body)
	}
	if body["scope"] != "openid offline_access pinniped:request-audience" {
		t.Errorf("granted scopes %v", body["scope"])
	}
	_, c := h.idToken(body["id_token"].(string), clientID)
	checkKeys(t, "the ID token of the authorization code grant", c, append(authcodeClaims, "additionalClaims")...)
	loginTime := c["rat"].(float64)
	checkTiming(t, "the ID token of the authorization code grant", c, 10*time.Minute, loginTime)
	if c["azp"] != clientID {
		t.Errorf("azp %v, want %s", c["azp"], clientID)
	}

	status, body = h.postToken(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {body["refresh_token"].(string)}}, clientID, clientSecret)
	if status != 200 {
		t.Fatalf("refresh: %d %v", status, body)
	}
	_, c = h.idToken(body["id_token"].(string), clientID)
	checkKeys(t, "the ID token of the refresh grant", c, append(refreshClaims, "additionalClaims")...)
	checkTiming(t, "the ID token of the refresh grant", c, 10*time.Minute, loginTime)

	// As upstream, a session without the username claim is not exchanged.
	status, body = h.postToken(url.Values{"grant_type": {provider.GrantTokenExchange}, "audience": {"cluster-1"}, "subject_token": {body["access_token"].(string)},
		"subject_token_type": {tokenTypeAccessToken}, "requested_token_type": {tokenTypeJWT}}, clientID, clientSecret)
	exchangeRefusal{http.StatusForbidden, "access_denied",
		`No username found in session. Ensure that the "username" scope was requested and granted at the authorization endpoint.`}.check(t, "token exchange without username", status, body)
}
