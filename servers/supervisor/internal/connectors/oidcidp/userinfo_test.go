package oidcidp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"sealion.dev/core/testing/oidcissuer"
	"sealion.dev/servers/supervisor/internal/connectors"
)

// userInfoUpstream is an upstream whose token endpoint answers what the test sets, and whose
// userinfo endpoint (when it has one) answers the claims set for the access token presented.
type userInfoUpstream struct {
	t   *testing.T
	iss *oidcissuer.Issuer

	mu sync.Mutex
	// idToken are the claims of the ID token the token endpoint returns; nil returns none.
	idToken map[string]any
	// refreshToken is returned by the token endpoint when set.
	refreshToken string
	// userInfo are the userinfo claims by access token; a token not listed gets 401.
	userInfo map[string]map[string]any
	// userInfoCalls are the access tokens presented to the userinfo endpoint.
	userInfoCalls []string
	revoked       []string
}

const upstreamAccessToken = "upstream-access-token"

func newUserInfoUpstream(t *testing.T, withUserInfo bool) *userInfoUpstream {
	u := &userInfoUpstream{t: t, userInfo: map[string]map[string]any{}}
	overrides := map[string]any{}
	u.iss = oidcissuer.New(t, oidcissuer.WithDiscoveryOverrides(overrides),
		oidcissuer.WithEndpoint("POST /token", u.token),
		oidcissuer.WithEndpoint("GET /userinfo", u.serveUserInfo),
		oidcissuer.WithEndpoint("POST /revoke", u.revoke))
	// The issuer's URL is known once it runs; nothing has read discovery yet.
	overrides["revocation_endpoint"] = u.iss.Issuer + "/revoke"
	if withUserInfo {
		overrides["userinfo_endpoint"] = u.iss.Issuer + "/userinfo"
	}
	return u
}

func (u *userInfoUpstream) token(w http.ResponseWriter, _ *http.Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	answer := map[string]any{"access_token": upstreamAccessToken, "token_type": "Bearer", "expires_in": 3600}
	if u.refreshToken != "" {
		answer["refresh_token"] = u.refreshToken
	}
	if u.idToken != nil {
		claims := map[string]any{"aud": "supervisor"}
		for k, v := range u.idToken {
			claims[k] = v
		}
		raw, err := u.iss.Issue(claims)
		if err != nil {
			u.t.Error(err)
		}
		answer["id_token"] = raw
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

func (u *userInfoUpstream) serveUserInfo(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	u.userInfoCalls = append(u.userInfoCalls, token)
	claims, ok := u.userInfo[token]
	if !ok {
		http.Error(w, "invalid_token", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(claims)
}

func (u *userInfoUpstream) revoke(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	_ = r.ParseForm()
	u.revoked = append(u.revoked, r.PostForm.Get("token_type_hint")+"="+r.PostForm.Get("token"))
}

func (u *userInfoUpstream) connector(ignoreUserInfo bool) *Connector {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(u.iss.CABundle)
	return New(Config{
		IssuerURL: u.iss.Issuer, ClientID: "supervisor", ClientSecret: "shh",
		UsernameClaim: "email", GroupsClaim: "groups",
		HTTPClient:     &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}},
		IgnoreUserInfo: ignoreUserInfo,
	})
}

var login = connectors.Login{IDPName: "corp", CallbackURL: "https://supervisor.example/callback"}

func hint(err error) string {
	var e *connectors.Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return "not a connectors.Error: " + err.Error()
}

// Pinniped merges the userinfo claims into the ID token's, so that upstreams which send groups
// only from their userinfo endpoint (Okta, Azure AD) give users their groups.
func TestLoginMergesUserInfo(t *testing.T) {
	u := newUserInfoUpstream(t, true)
	u.refreshToken = "upstream-refresh-token"
	u.idToken = map[string]any{"sub": "pinny", "email": "pinny@example.com"}
	u.userInfo[upstreamAccessToken] = map[string]any{"sub": "pinny", "groups": []string{"seals"}, "email": "p@example.com", "iss": "https://elsewhere.example"}

	id, err := u.connector(false).Authenticate(context.Background(), login, "pinny", "password")
	if err != nil {
		t.Fatal(err)
	}
	// Userinfo claims win, except iss: only the ID token's is signed.
	if id.Username != "p@example.com" || !slices.Equal(id.Groups, []string{"seals"}) {
		t.Errorf("identity = %q %q, want the userinfo's email and groups", id.Username, id.Groups)
	}
	want := u.iss.Issuer + "?idpName=corp&sub=pinny"
	if id.Subject != want || id.Session.OIDC.UpstreamIssuer != u.iss.Issuer {
		t.Errorf("subject = %q, issuer %q; want %q and the ID token's issuer", id.Subject, id.Session.OIDC.UpstreamIssuer, want)
	}
	if id.Session.OIDC.UpstreamRefreshToken != "upstream-refresh-token" || id.Session.OIDC.UpstreamAccessToken != "" {
		t.Errorf("session = %+v, want only the refresh token", id.Session.OIDC)
	}
	if !slices.Equal(u.userInfoCalls, []string{upstreamAccessToken}) {
		t.Errorf("userinfo calls = %q", u.userInfoCalls)
	}
}

func TestLoginRefusesUserInfoOfAnotherSubject(t *testing.T) {
	u := newUserInfoUpstream(t, true)
	u.refreshToken = "upstream-refresh-token"
	u.idToken = map[string]any{"sub": "pinny", "email": "pinny@example.com"}
	u.userInfo[upstreamAccessToken] = map[string]any{"sub": "walter", "groups": []string{"admins"}}

	_, err := u.connector(false).Authenticate(context.Background(), login, "pinny", "password")
	want := "could not fetch user info claims: userinfo 'sub' claim (walter) did not match id_token 'sub' claim (pinny)"
	if err == nil || hint(err) != want {
		t.Fatalf("err = %v, want hint %q", err, want)
	}
}

// An upstream that issues no refresh token is refreshed with its access token at the userinfo
// endpoint; without a userinfo endpoint, it cannot be, and the login is refused as Pinniped does.
func TestLoginWithoutRefreshToken(t *testing.T) {
	t.Run("userinfo endpoint", func(t *testing.T) {
		u := newUserInfoUpstream(t, true)
		u.idToken = map[string]any{"sub": "pinny", "email": "pinny@example.com"}
		u.userInfo[upstreamAccessToken] = map[string]any{"sub": "pinny"}
		id, err := u.connector(false).Authenticate(context.Background(), login, "pinny", "password")
		if err != nil {
			t.Fatal(err)
		}
		if s := id.Session.OIDC; s.UpstreamAccessToken != upstreamAccessToken || s.UpstreamRefreshToken != "" {
			t.Errorf("session = %+v, want the access token only", s)
		}
	})
	for name, ignore := range map[string]bool{"no userinfo endpoint": false, "userinfo endpoint ignored": true} {
		t.Run(name, func(t *testing.T) {
			u := newUserInfoUpstream(t, ignore)
			u.idToken = map[string]any{"sub": "pinny", "email": "pinny@example.com"}
			_, err := u.connector(ignore).Authenticate(context.Background(), login, "pinny", "password")
			want := "access token was returned by upstream provider but there was no userinfo endpoint"
			if err == nil || hint(err) != want {
				t.Fatalf("err = %v, want hint %q", err, want)
			}
			if len(u.userInfoCalls) != 0 {
				t.Errorf("userinfo was called: %q", u.userInfoCalls)
			}
		})
	}
}

func TestIgnoredUserInfoIsNotRead(t *testing.T) {
	u := newUserInfoUpstream(t, true)
	u.refreshToken = "upstream-refresh-token"
	u.idToken = map[string]any{"sub": "pinny", "email": "pinny@example.com", "groups": []string{"seals"}}
	u.userInfo[upstreamAccessToken] = map[string]any{"sub": "pinny", "groups": []string{"admins"}}
	id, err := u.connector(true).Authenticate(context.Background(), login, "pinny", "password")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(id.Groups, []string{"seals"}) || len(u.userInfoCalls) != 0 {
		t.Errorf("groups = %q after userinfo calls %q; want the ID token's and no call", id.Groups, u.userInfoCalls)
	}
}

func TestRefreshWithAccessToken(t *testing.T) {
	u := newUserInfoUpstream(t, true)
	c := u.connector(false)
	prev := connectors.Identity{Username: "pinny@example.com", Groups: []string{"seals"}, Session: connectors.Session{OIDC: &connectors.OIDCSession{
		UpstreamIssuer: u.iss.Issuer, UpstreamSubject: "pinny", UpstreamAccessToken: "stored-access-token",
	}}}

	u.userInfo["stored-access-token"] = map[string]any{"sub": "pinny", "groups": []string{"seals", "walruses"}}
	now, err := c.Refresh(context.Background(), login, prev)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(now.Groups, []string{"seals", "walruses"}) || now.Username != "pinny@example.com" {
		t.Errorf("refreshed = %q %q, want the userinfo's groups and the login's username", now.Username, now.Groups)
	}
	if !slices.Equal(u.userInfoCalls, []string{"stored-access-token"}) {
		t.Errorf("userinfo calls = %q, want the stored access token", u.userInfoCalls)
	}

	u.userInfo["stored-access-token"] = map[string]any{"sub": "walter"}
	if _, err := c.Refresh(context.Background(), login, prev); err == nil || hint(err) != "the upstream identity changed since the login" {
		t.Errorf("another subject: err = %v", err)
	}
	delete(u.userInfo, "stored-access-token")
	if _, err := c.Refresh(context.Background(), login, prev); err == nil || hint(err) != "the upstream returned an invalid ID token or userinfo response" {
		t.Errorf("revoked access token: err = %v", err)
	}
	// The access token is the only proof the user may still log in: without a userinfo endpoint
	// to present it to, the refresh fails.
	if _, err := u.connector(true).Refresh(context.Background(), login, prev); err == nil || !strings.Contains(err.Error(), "userinfo endpoint not found, but is required") {
		t.Errorf("ignored userinfo endpoint: err = %v", err)
	}
}

// A refresh that returns no ID token still learns the groups from userinfo, for the subject of
// the login.
func TestRefreshWithoutIDTokenReadsUserInfo(t *testing.T) {
	u := newUserInfoUpstream(t, true)
	u.refreshToken = "rotated-refresh-token"
	u.userInfo[upstreamAccessToken] = map[string]any{"sub": "pinny", "groups": []string{"walruses"}}
	prev := connectors.Identity{Username: "pinny@example.com", Groups: []string{"seals"}, Session: connectors.Session{OIDC: &connectors.OIDCSession{
		UpstreamIssuer: u.iss.Issuer, UpstreamSubject: "pinny", UpstreamRefreshToken: "stored-refresh-token",
	}}}
	now, err := u.connector(false).Refresh(context.Background(), login, prev)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(now.Groups, []string{"walruses"}) || now.Session.OIDC.UpstreamRefreshToken != "rotated-refresh-token" {
		t.Errorf("refreshed = %q, session %+v", now.Groups, now.Session.OIDC)
	}
	if prev.Session.OIDC.UpstreamRefreshToken != "stored-refresh-token" {
		t.Error("Refresh changed the previous session")
	}
}

func TestRevokeAccessTokenOnlySession(t *testing.T) {
	u := newUserInfoUpstream(t, true)
	s := connectors.Session{OIDC: &connectors.OIDCSession{UpstreamIssuer: u.iss.Issuer, UpstreamSubject: "pinny", UpstreamAccessToken: "stored-access-token"}}
	if !s.Revocable() {
		t.Fatal("a session holding an upstream access token is not revocable")
	}
	hint, err := u.connector(false).Revoke(context.Background(), s)
	if err != nil || hint != "access_token" {
		t.Fatalf("Revoke = %q, %v", hint, err)
	}
	if want := []string{"access_token=stored-access-token"}; !slices.Equal(u.revoked, want) {
		t.Errorf("revoked %q, want %q", u.revoked, want)
	}
}

// The Supervisor's oidc.ignoreUserInfoEndpoint setting reaches the connectors of the issuers it
// names, and only those.
func TestOpenIgnoresUserInfoOfConfiguredIssuers(t *testing.T) {
	iss := oidcissuer.New(t)
	o := newOpener(t)
	idp := oidcIDP(iss)
	for _, ignored := range [][]string{nil, {iss.Issuer + "/other"}, {"https://x.example", iss.Issuer}} {
		o.settings = connectors.Settings{IgnoreUserInfoIssuers: ignored}
		c, _ := o.open(idp)
		if c == nil {
			t.Fatal("not opened")
		}
		if want := slices.Contains(ignored, iss.Issuer); c.cfg.IgnoreUserInfo != want {
			t.Errorf("ignored issuers %q: IgnoreUserInfo = %v, want %v", ignored, c.cfg.IgnoreUserInfo, want)
		}
	}
}
