package oauth

import (
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

const ldapIDPName = "Corp LDAP"

func ldapIDP(typ issuer.IdentityProviderType) issuer.IdentityProvider {
	return issuer.IdentityProvider{
		DisplayName: ldapIDPName, Type: typ, Flows: []issuer.Flow{issuer.FlowCLIPassword, issuer.FlowBrowserAuthcode},
		Kind: "LDAPIdentityProvider", Name: "corp-ldap", UID: "ldap-uid",
	}
}

func newLDAPHarness(t *testing.T, typ issuer.IdentityProviderType) (*harness, *fakeDirectory) {
	dir := newFakeDirectory()
	ups := &fakeUpstreams{}
	ups.add(typ, "corp-ldap", dir)
	return newHarnessWith(t, ups, ldapIDP(typ)), dir
}

// passwordAuthorize sends a cli_password authorize request, as the pinniped CLI does, and
// returns the redirect the Supervisor answered with (which the CLI never follows).
func (h *harness) passwordAuthorize(l *login, idp, username, password string) (*http.Response, *url.URL) {
	h.t.Helper()
	authURL := h.cli().AuthCodeURL(l.state, oidc.Nonce(l.nonce), oauth2.S256ChallengeOption(l.verifier), oauth2.SetAuthURLParam("pinniped_idp_name", idp))
	req, err := http.NewRequestWithContext(h.ctx, http.MethodGet, authURL, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set(usernameHeader, username)
	req.Header.Set(passwordHeader, password)
	noFollow := &http.Client{Transport: h.server.Client().Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	_ = resp.Body.Close()
	loc, _ := resp.Location()
	return resp, loc
}

func newLogin() *login {
	return &login{verifier: oauth2.GenerateVerifier(), nonce: rand.Text(), state: rand.Text()}
}

func TestCLIPasswordFlowLDAP(t *testing.T) {
	for _, typ := range []issuer.IdentityProviderType{issuer.TypeLDAP, issuer.TypeActiveDirectory} {
		t.Run(string(typ), func(t *testing.T) {
			h, dir := newLDAPHarness(t, typ)
			l := newLogin()
			resp, loc := h.passwordAuthorize(l, ldapIDPName, "pinny", "pinny-password")
			if resp.StatusCode != http.StatusFound || loc == nil || !strings.HasPrefix(loc.String(), cliCallback+"?") ||
				loc.Query().Get("code") == "" || loc.Query().Get("state") != l.state {
				t.Fatalf("got %s to %v; want 302 Found to the CLI's redirect URI with a code and the state", resp.Status, loc)
			}
			tok, err := h.cli().Exchange(h.clientContext(), loc.Query().Get("code"), oauth2.VerifierOption(l.verifier))
			if err != nil {
				t.Fatalf("redeeming the code: %v", err)
			}
			idt, claims := h.idToken(tok.Extra("id_token").(string), provider.PinnipedCLIClientID)
			wantSub := "ldaps://ldap.example.com:636?base=ou%3Dpeople%2Cdc%3Dexample%2Cdc%3Dcom&idpName=Corp+LDAP&sub=uid-pinny"
			if idt.Subject != wantSub || idt.Nonce != l.nonce || claims["username"] != "pinny" || !slices.Equal(toStrings(claims["groups"]), []string{"seals", "walruses"}) {
				t.Errorf("ID token sub %q nonce %q claims %v; want sub %q and the directory's identity", idt.Subject, idt.Nonce, claims, wantSub)
			}

			// A refresh re-reads the user and picks up new groups.
			dir.update(func(users map[string]*directoryUser) { users["pinny"].groups = []string{"seals"} })
			refreshed, err := h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			if err != nil {
				t.Fatalf("refresh: %v", err)
			}
			if _, c := h.idToken(refreshed.Extra("id_token").(string), provider.PinnipedCLIClientID); !slices.Equal(toStrings(c["groups"]), []string{"seals"}) || c["sub"] != wantSub {
				t.Errorf("refreshed claims %v; want the new groups", c)
			}

			// A disabled account can no longer refresh.
			dir.update(func(users map[string]*directoryUser) { users["pinny"].disabled = true })
			_, err = h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: refreshed.RefreshToken}).Token()
			var re *oauth2.RetrieveError
			if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" || !strings.Contains(re.ErrorDescription, "Upstream refresh failed") ||
				strings.Contains(re.ErrorDescription, "dc=example") {
				t.Errorf("refresh of a disabled user: %v; want invalid_grant without directory details", err)
			}
			if dir.refreshes != 2 {
				t.Errorf("the directory saw %d refreshes, want 2", dir.refreshes)
			}
		})
	}
}

func TestCLIPasswordFlowRejects(t *testing.T) {
	h, dir := newLDAPHarness(t, issuer.TypeLDAP)
	denied := "The resource owner or authorization server denied the request. "
	tests := []struct {
		name, username, password string
		noHeaders                bool
		down                     bool
		wantError, wantDesc      string
	}{
		{name: "wrong password", username: "pinny", password: "nope", wantError: "access_denied", wantDesc: denied + "Username/password not accepted by LDAP provider."},
		{name: "unknown user", username: "nobody", password: "pinny-password", wantError: "access_denied", wantDesc: denied + "Username/password not accepted by LDAP provider."},
		{name: "blank password", username: "pinny", password: "", wantError: "access_denied", wantDesc: denied + "Missing or blank username or password."},
		{name: "blank username", username: "", password: "pinny-password", wantError: "access_denied", wantDesc: denied + "Missing or blank username or password."},
		{name: "server down", username: "pinny", password: "pinny-password", down: true, wantError: "temporarily_unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir.update(func(map[string]*directoryUser) { dir.down = tt.down })
			l := newLogin()
			resp, loc := h.passwordAuthorize(l, ldapIDPName, tt.username, tt.password)
			if resp.StatusCode != http.StatusFound || loc == nil || !strings.HasPrefix(loc.String(), cliCallback+"?") {
				t.Fatalf("got %s to %v; want 302 Found to the CLI", resp.Status, loc)
			}
			q := loc.Query()
			if q.Get("error") != tt.wantError || (tt.wantDesc != "" && q.Get("error_description") != tt.wantDesc) || q.Get("state") != l.state || q.Get("code") != "" {
				t.Errorf("redirect query %v; want error %q (%q)", q, tt.wantError, tt.wantDesc)
			}
			if strings.Contains(q.Get("error_description"), "secret-service-account") {
				t.Errorf("the error leaks the upstream's error: %q", q.Get("error_description"))
			}
		})
	}
	if got := h.storedTypes(); len(got) != 0 {
		t.Errorf("failed logins stored %v", got)
	}
}

func TestCLIPasswordFlowOIDC(t *testing.T) {
	oidcIDP := func(flows ...issuer.Flow) issuer.IdentityProvider {
		return issuer.IdentityProvider{DisplayName: idpName, Type: issuer.TypeOIDC, Flows: flows, Kind: "OIDCIdentityProvider", Name: "upstream-idp", UID: "idp-uid"}
	}

	t.Run("password grant allowed", func(t *testing.T) {
		h := newHarnessWith(t, nil, oidcIDP(issuer.FlowBrowserAuthcode, issuer.FlowCLIPassword))
		l := newLogin()
		_, loc := h.passwordAuthorize(l, idpName, "pinny@example.com", upstreamPassword)
		if loc == nil || loc.Query().Get("code") == "" {
			t.Fatalf("password login: redirect %v, want a code", loc)
		}
		tok, err := h.cli().Exchange(h.clientContext(), loc.Query().Get("code"), oauth2.VerifierOption(l.verifier))
		if err != nil {
			t.Fatal(err)
		}
		if _, claims := h.idToken(tok.Extra("id_token").(string), provider.PinnipedCLIClientID); claims["username"] != "pinny@example.com" {
			t.Errorf("claims %v", claims)
		}
		_, loc = h.passwordAuthorize(newLogin(), idpName, "pinny@example.com", "wrong")
		if loc == nil || loc.Query().Get("error") != "access_denied" {
			t.Errorf("wrong password: redirect %v, want access_denied", loc)
		}
	})

	t.Run("password grant not allowed", func(t *testing.T) {
		h := newHarnessWith(t, nil, oidcIDP(issuer.FlowBrowserAuthcode))
		_, loc := h.passwordAuthorize(newLogin(), idpName, "pinny@example.com", upstreamPassword)
		if loc == nil || loc.Query().Get("error") != "access_denied" ||
			!strings.Contains(loc.Query().Get("error_description"), "Resource owner password credentials grant is not allowed") {
			t.Errorf("redirect %v; want access_denied", loc)
		}
	})
}

// get GETs u in the browser and returns the last response and its body.
func (h *harness) get(u string) (*http.Response, string) {
	h.t.Helper()
	resp, err := h.browser.Get(u)
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestBrowserLDAPLogin(t *testing.T) {
	h, dir := newLDAPHarness(t, issuer.TypeLDAP)
	l := newLogin()
	resp, page := h.get(h.cli().AuthCodeURL(l.state, oidc.Nonce(l.nonce), oauth2.S256ChallengeOption(l.verifier)))
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/fd"+provider.LoginPath || !strings.Contains(page, "Log in to Corp LDAP") ||
		!strings.Contains(page, `name="password"`) || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("authorize led to %s %s:\n%s", resp.Status, resp.Request.URL, page)
	}
	state := resp.Request.URL.Query().Get("state")
	post := func(client *http.Client, username, password string) *http.Response {
		t.Helper()
		resp, err := client.PostForm(h.issuerURL+provider.LoginPath, url.Values{"state": {state}, "username": {username}, "password": {password}})
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp
	}

	// Another browser (without the CSRF cookie) cannot submit the form.
	if resp := post(&http.Client{Transport: h.browser.Transport}, "pinny", "pinny-password"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST without the CSRF cookie: %s, want 403", resp.Status)
	}

	// A wrong password shows the form again with a generic message.
	resp = post(h.browser, "pinny", "wrong")
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Query().Get("err") != "login_error" {
		t.Fatalf("wrong password led to %s %s", resp.Status, resp.Request.URL)
	}
	if _, page := h.get(resp.Request.URL.String()); !strings.Contains(page, "Incorrect username or password.") {
		t.Errorf("the form does not say the password was wrong:\n%s", page)
	}
	// The server failing is not described to the user.
	dir.update(func(map[string]*directoryUser) { dir.down = true })
	resp = post(h.browser, "pinny", "pinny-password")
	_, page = h.get(resp.Request.URL.String())
	if !strings.Contains(page, "An internal error occurred.") || strings.Contains(page, "connection refused") {
		t.Errorf("after a server failure the form shows:\n%s", page)
	}
	dir.update(func(map[string]*directoryUser) { dir.down = false })
	// Only known messages are shown.
	if _, page := h.get(h.issuerURL + provider.LoginPath + "?" + url.Values{"state": {state}, "err": {"<script>"}}.Encode()); strings.Contains(page, "script") {
		t.Errorf("the form shows an unknown error parameter:\n%s", page)
	}

	// The right password ends at the CLI with a code.
	resp = post(h.browser, "pinny", "pinny-password")
	loc, err := resp.Location()
	if resp.StatusCode != http.StatusSeeOther || err != nil || loc.Query().Get("state") != l.state || loc.Query().Get("code") == "" {
		t.Fatalf("login answered %s to %v; want a redirect to the CLI with a code", resp.Status, loc)
	}
	tok, err := h.cli().Exchange(h.clientContext(), loc.Query().Get("code"), oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	if _, claims := h.idToken(tok.Extra("id_token").(string), provider.PinnipedCLIClientID); claims["username"] != "pinny" {
		t.Errorf("claims %v", claims)
	}
}

// TestBrowserLDAPLoginFormPost: with response_mode=form_post, as the CLI asks when discovery
// offers it, the login form's answer is the page that posts the code to the CLI.
func TestBrowserLDAPLoginFormPost(t *testing.T) {
	h, _ := newLDAPHarness(t, issuer.TypeLDAP)
	l := newLogin()
	resp, _ := h.get(h.cli().AuthCodeURL(l.state, oidc.Nonce(l.nonce), oauth2.S256ChallengeOption(l.verifier),
		oauth2.SetAuthURLParam("response_mode", "form_post")))
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/fd"+provider.LoginPath {
		t.Fatalf("authorize led to %s %s", resp.Status, resp.Request.URL)
	}
	resp, err := h.browser.PostForm(h.issuerURL+provider.LoginPath, url.Values{"state": {resp.Request.URL.Query().Get("state")},
		"username": {"pinny"}, "password": {"pinny-password"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	page := string(body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `action="`+cliCallback+`"`) ||
		!strings.Contains(page, `name="state" value="`+l.state+`"`) || !strings.Contains(page, `name="code" value="`) {
		t.Fatalf("login answered %s:\n%s", resp.Status, page)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'sha256-") {
		t.Errorf("the page's policy %q does not allow its script", csp)
	}
}
