package oidclogin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sealion.dev/cli/internal/testing/fakeissuer"
	"sealion.dev/cli/pkg/oidclogin"
	"sealion.dev/core/testing/syncbuffer"
)

const clientID = "pinniped-cli"

// memCache is an in-memory session cache.
type memCache struct {
	mu     sync.Mutex
	tokens map[string]*oidclogin.Token
	keys   []oidclogin.SessionKey
}

func newMemCache() *memCache { return &memCache{tokens: map[string]*oidclogin.Token{}} }

func keyString(k oidclogin.SessionKey) string { b, _ := json.Marshal(k); return string(b) }

func (c *memCache) GetToken(k oidclogin.SessionKey) *oidclogin.Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tokens[keyString(k)]
}

func (c *memCache) PutToken(k oidclogin.SessionKey, t *oidclogin.Token) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t == nil {
		delete(c.tokens, keyString(k))
		return
	}
	c.tokens[keyString(k)] = t
	c.keys = append(c.keys, k)
}

// only returns the one session stored.
func (c *memCache) only(t *testing.T) *oidclogin.Token {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.tokens) != 1 {
		t.Fatalf("the cache holds %d sessions, want 1", len(c.tokens))
	}
	for _, tok := range c.tokens {
		return tok
	}
	return nil
}

// browser opens URLs with the issuer double, as the user's browser would, and keeps its answers.
type browser struct {
	iss     *fakeissuer.Issuer
	mu      sync.Mutex
	opened  []string
	answers []string
	// before runs first, with the redirect URI of the authorization URL.
	before func(redirectURI string)
}

func (b *browser) open(authURL string) error {
	b.mu.Lock()
	b.opened = append(b.opened, authURL)
	b.mu.Unlock()
	go func() {
		if b.before != nil {
			u, _ := url.Parse(authURL)
			b.before(u.Query().Get("redirect_uri"))
		}
		status, text, err := b.iss.Browse(authURL)
		b.mu.Lock()
		defer b.mu.Unlock()
		if err != nil {
			b.answers = append(b.answers, "error: "+err.Error())
			return
		}
		b.answers = append(b.answers, http.StatusText(status)+": "+strings.TrimSpace(text))
	}()
	return nil
}

func (b *browser) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.opened)
}

func config(iss *fakeissuer.Issuer, out io.Writer, open func(string) error) oidclogin.Config {
	return oidclogin.Config{
		Issuer:     iss.URL,
		ClientID:   clientID,
		Scopes:     []string{"openid", "offline_access", "username", "groups"},
		HTTPClient: iss.Client(),
		OpenURL:    open,
		Out:        out,
	}
}

func login(t *testing.T, cfg oidclogin.Config) (*oidclogin.Token, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return oidclogin.Login(ctx, cfg)
}

func checkIdentity(t *testing.T, tok *oidclogin.Token, audience string) {
	t.Helper()
	if tok == nil || tok.IDToken == nil {
		t.Fatalf("no ID token in %+v", tok)
	}
	c := tok.IDToken.Claims
	if c["username"] != fakeissuer.Username || c["aud"] != audience || c["sub"] != fakeissuer.Subject {
		t.Errorf("claims = %v, want username %s, aud %s", c, fakeissuer.Username, audience)
	}
	if groups, _ := c["groups"].([]any); len(groups) != 2 || groups[0] != "seals" || groups[1] != "walruses" {
		t.Errorf("groups claim = %v", c["groups"])
	}
	if time.Until(tok.IDToken.Expiry.Time) < 50*time.Minute {
		t.Errorf("ID token expiry %s, want about an hour from now", tok.IDToken.Expiry)
	}
}

func TestBrowserLogin(t *testing.T) {
	for _, formPost := range []bool{false, true} {
		name := map[bool]string{false: "redirect to the listener", true: "form_post to the listener"}[formPost]
		t.Run(name, func(t *testing.T) {
			iss := fakeissuer.New(t, fakeissuer.Options{FormPost: formPost})
			b := &browser{iss: iss}
			var out syncbuffer.Buffer
			cache := newMemCache()
			cfg := config(iss, &out, b.open)
			cfg.SessionCache = cache
			tok, err := login(t, cfg)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			checkIdentity(t, tok, clientID)
			if tok.RefreshToken == nil || tok.AccessToken == nil || tok.AccessToken.Type != "Bearer" {
				t.Errorf("tokens = %+v, want access and refresh tokens", tok)
			}
			auths := iss.Authorizations()
			if len(auths) != 1 {
				t.Fatalf("%d authorization requests, want 1", len(auths))
			}
			q := auths[0]
			if q.Get("code_challenge_method") != "S256" || q.Get("nonce") == "" || q.Get("state") == "" || q.Get("client_id") != clientID ||
				q.Get("scope") != "groups offline_access openid username" {
				t.Errorf("authorization request %v lacks PKCE, nonce, state or the sorted scopes", q)
			}
			if got := q.Get("response_mode") == "form_post"; got != formPost {
				t.Errorf("response_mode = %q, want form_post: %v", q.Get("response_mode"), formPost)
			}
			if !strings.Contains(out.String(), "\n"+b.opened[0]+"\n") {
				t.Errorf("the URL is not printed on a line of its own:\n%s", out.String())
			}
			waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.answers) == 1 })
			if b.answers[0] != "OK: You have been logged in and may now close this tab." {
				t.Errorf("the browser was told %q", b.answers[0])
			}
			if stored := cache.only(t); stored.IDToken.Token != tok.IDToken.Token {
				t.Error("the session cache does not hold the new tokens")
			}
			if key := cache.keys[0]; key.RedirectURI != "http://localhost:0/callback" || !slices.IsSorted(key.Scopes) {
				t.Errorf("session key = %+v", key)
			}
		})
	}
}

func TestFormPostPreflight(t *testing.T) {
	iss := fakeissuer.New(t, fakeissuer.Options{FormPost: true})
	type answer struct {
		status  int
		headers http.Header
	}
	answers := make(chan answer, 2)
	preflight := func(redirectURI, origin string) {
		req, _ := http.NewRequest(http.MethodOptions, redirectURI, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Private-Network", "true")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answers <- answer{}
			return
		}
		_ = resp.Body.Close()
		answers <- answer{resp.StatusCode, resp.Header}
	}
	b := &browser{iss: iss, before: func(redirectURI string) {
		preflight(redirectURI, iss.URL)
		preflight(redirectURI, "https://evil.example")
	}}
	var out syncbuffer.Buffer
	if _, err := login(t, config(iss, &out, b.open)); err != nil {
		t.Fatal(err)
	}
	ok, evil := <-answers, <-answers
	if ok.status != http.StatusNoContent || ok.headers.Get("Access-Control-Allow-Origin") != iss.URL ||
		ok.headers.Get("Access-Control-Allow-Private-Network") != "true" {
		t.Errorf("preflight from the issuer: %d %v", ok.status, ok.headers)
	}
	if evil.status != http.StatusForbidden {
		t.Errorf("preflight from another origin: %d, want 403", evil.status)
	}
}

// readURL returns the first line of r that is an https URL, then keeps draining r.
func readURL(r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "https://") {
			go func() { _, _ = io.Copy(io.Discard, r) }()
			return sc.Text()
		}
	}
	return ""
}

func TestSkipBrowserPrintsTheURL(t *testing.T) {
	iss := fakeissuer.New(t, fakeissuer.Options{})
	pr, pw := io.Pipe()
	defer pw.Close()
	cfg := config(iss, pw, func(string) error { t.Error("the browser was opened despite SkipBrowser"); return nil })
	cfg.SkipBrowser = true
	go func() {
		if _, _, err := iss.Browse(readURL(pr)); err != nil {
			t.Errorf("browsing: %v", err)
		}
	}()
	tok, err := login(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkIdentity(t, tok, clientID)
}

// prompter answers prompts with lines the test sends.
type prompter struct {
	lines     chan string
	mu        sync.Mutex
	prompts   []string
	passwords []string
}

func (p *prompter) ReadLine(prompt string) (string, error) {
	p.mu.Lock()
	p.prompts = append(p.prompts, prompt)
	p.mu.Unlock()
	line, ok := <-p.lines
	if !ok {
		return "", io.EOF
	}
	return line, nil
}

func (p *prompter) ReadPassword(prompt string) (string, error) {
	p.mu.Lock()
	p.prompts = append(p.prompts, prompt)
	p.mu.Unlock()
	line, ok := <-p.lines
	if !ok {
		return "", io.EOF
	}
	return line, nil
}

// authorize sends the authorization request as a browser would and returns where the issuer
// redirects it.
func authorize(t *testing.T, iss *fakeissuer.Issuer, authURL string) *url.URL {
	client := iss.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Get(authURL)
	if err != nil {
		t.Error(err)
		return &url.URL{}
	}
	_ = resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		t.Error(err)
		return &url.URL{}
	}
	return loc
}

func TestPastedCode(t *testing.T) {
	tests := []struct {
		name    string
		paste   func(redirect *url.URL) string
		wantErr error
	}{
		{name: "the bare code", paste: func(r *url.URL) string { return r.Query().Get("code") }},
		{name: "the whole redirect URL", paste: func(r *url.URL) string { return r.String() }},
		{name: "a redirect URL of another login", wantErr: oidclogin.ErrStateMismatch, paste: func(r *url.URL) string {
			q := r.Query()
			q.Set("state", "another-login")
			r.RawQuery = q.Encode()
			return r.String()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss := fakeissuer.New(t, fakeissuer.Options{})
			pr, pw := io.Pipe()
			defer pw.Close()
			p := &prompter{lines: make(chan string, 1)}
			cfg := config(iss, pw, nil)
			cfg.SkipBrowser, cfg.SkipListen, cfg.Prompter = true, true, p
			go func() {
				authURL := readURL(pr)
				redirect := authorize(t, iss, authURL)
				if redirect.Host != "127.0.0.1:0" {
					t.Errorf("redirect URI %s, want port 0 without a listener", redirect)
				}
				p.lines <- tt.paste(redirect)
			}()
			tok, err := login(t, cfg)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkIdentity(t, tok, clientID)
			if len(p.prompts) != 1 || !strings.Contains(p.prompts[0], "paste your authorization code") {
				t.Errorf("prompts = %q", p.prompts)
			}
		})
	}
}

func TestCallbackErrors(t *testing.T) {
	tests := []struct {
		name       string
		query      func(state string) url.Values
		wantErr    string
		wantErrIs  error
		wantAnswer int
	}{
		{name: "wrong state", query: func(string) url.Values { return url.Values{"code": {"secret-code"}, "state": {"forged"}} },
			wantErrIs: oidclogin.ErrStateMismatch, wantAnswer: http.StatusBadRequest},
		{name: "issuer error", query: func(state string) url.Values {
			return url.Values{"error": {"access_denied"}, "error_description": {"the user said no"}, "state": {state}}
		}, wantErr: "the issuer refused the login: access_denied: the user said no", wantAnswer: http.StatusBadRequest},
		{name: "unknown code", query: func(state string) url.Values { return url.Values{"code": {"secret-code"}, "state": {state}} },
			wantErr: "redeeming the authorization code failed: the issuer answered invalid_grant", wantAnswer: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss := fakeissuer.New(t, fakeissuer.Options{})
			answers := make(chan int, 1)
			open := func(authURL string) error {
				u, _ := url.Parse(authURL)
				go func() {
					resp, err := http.Get(u.Query().Get("redirect_uri") + "?" + tt.query(u.Query().Get("state")).Encode())
					if err != nil {
						answers <- 0
						return
					}
					_ = resp.Body.Close()
					answers <- resp.StatusCode
				}()
				return nil
			}
			var out syncbuffer.Buffer
			_, err := login(t, config(iss, &out, open))
			if err == nil || (tt.wantErrIs != nil && !errors.Is(err, tt.wantErrIs)) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %v %q", err, tt.wantErrIs, tt.wantErr)
			}
			if strings.Contains(err.Error(), "secret-code") {
				t.Errorf("the error shows the code: %v", err)
			}
			if got := <-answers; got != tt.wantAnswer {
				t.Errorf("the browser got HTTP %d, want %d", got, tt.wantAnswer)
			}
		})
	}
}

func TestSessionCacheAndRefresh(t *testing.T) {
	iss := fakeissuer.New(t, fakeissuer.Options{})
	b := &browser{iss: iss}
	var out syncbuffer.Buffer
	cache := newMemCache()
	cfg := config(iss, &out, b.open)
	cfg.SessionCache = cache
	var debug syncbuffer.Buffer
	cfg.Logf = func(format string, args ...any) { _, _ = io.WriteString(&debug, strings.TrimSpace(format)+"\n") }
	first, err := login(t, cfg)
	if err != nil {
		t.Fatal(err)
	}

	// A valid cached ID token needs no request at all.
	before := iss.Counts()
	second, err := login(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if second.IDToken.Token != first.IDToken.Token || iss.Counts() != before || b.count() != 1 {
		t.Errorf("the second login did not come from the cache: counts %+v -> %+v, browser opened %d times", before, iss.Counts(), b.count())
	}

	// An ID token close to its expiry is refreshed, and the rotated refresh token kept.
	stored := cache.only(t)
	stored.IDToken.Expiry = metav1.NewTime(time.Now().Add(5 * time.Minute))
	refreshed, err := login(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c := iss.Counts(); c.Refreshes != 1 || c.Authorizations != 1 || b.count() != 1 {
		t.Errorf("counts %+v after an expired ID token, browser opened %d times; want one refresh and no new login", c, b.count())
	}
	checkIdentity(t, refreshed, clientID)
	if refreshed.IDToken.Token == first.IDToken.Token || refreshed.RefreshToken.Token == first.RefreshToken.Token {
		t.Error("the refresh did not bring new ID and refresh tokens")
	}
	if cache.only(t).RefreshToken.Token != refreshed.RefreshToken.Token {
		t.Error("the cache does not hold the rotated refresh token")
	}

	// A refresh token the issuer no longer knows means a new login.
	stored = cache.only(t)
	stored.IDToken.Expiry = metav1.NewTime(time.Now().Add(-time.Minute))
	stored.RefreshToken.Token = "revoked"
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	if c := iss.Counts(); c.Refreshes != 2 || c.Authorizations != 2 || b.count() != 2 {
		t.Errorf("counts %+v after a failed refresh, browser opened %d times; want a new login", c, b.count())
	}
	for _, want := range []string{"using the cached session", "refreshing the session with its refresh token", "refreshing the session failed"} {
		if !strings.Contains(debug.String(), want) {
			t.Errorf("debug log lacks %q:\n%s", want, debug.String())
		}
	}
}

// TestRefreshWhileUpstreamDown: a refresh answered temporarily_unavailable fails the login at once,
// with no new login that could only fail the same way, and keeps the session for later.
func TestRefreshWhileUpstreamDown(t *testing.T) {
	iss := fakeissuer.New(t, fakeissuer.Options{})
	b := &browser{iss: iss}
	var out syncbuffer.Buffer
	cache := newMemCache()
	cfg := config(iss, &out, b.open)
	cfg.SessionCache = cache
	var debug syncbuffer.Buffer
	cfg.Logf = func(format string, args ...any) { _, _ = io.WriteString(&debug, strings.TrimSpace(format)+"\n") }
	first, err := login(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cache.only(t).IDToken.Expiry = metav1.NewTime(time.Now().Add(-time.Minute))

	iss.SetUpstreamDown(true)
	_, err = login(t, cfg)
	if !errors.Is(err, oidclogin.ErrUpstreamUnavailable) || !strings.Contains(err.Error(), "could not reach the identity provider") ||
		!strings.Contains(err.Error(), "'my-ldap' is unreachable") {
		t.Errorf("login while the upstream is down: %v; want ErrUpstreamUnavailable with the Supervisor's hint", err)
	}
	if c := iss.Counts(); c.Refreshes != 1 || c.Authorizations != 1 || b.count() != 1 {
		t.Errorf("counts %+v, browser opened %d times; want one refresh and no new login", c, b.count())
	}
	if got := cache.only(t).RefreshToken.Token; got != first.RefreshToken.Token {
		t.Errorf("the cache holds refresh token %q, want the session's %q", got, first.RefreshToken.Token)
	}
	if !strings.Contains(debug.String(), "refreshing the session failed") {
		t.Errorf("debug log lacks the failed refresh:\n%s", debug.String())
	}

	// Once the upstream is back, the same session refreshes.
	iss.SetUpstreamDown(false)
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	if c := iss.Counts(); c.Refreshes != 2 || c.Authorizations != 1 || b.count() != 1 {
		t.Errorf("counts %+v, browser opened %d times after the upstream came back; want a refresh", c, b.count())
	}
}

func supervisor(t *testing.T) *fakeissuer.Issuer {
	return fakeissuer.New(t, fakeissuer.Options{Supervisor: true, IdentityProviders: []fakeissuer.IdentityProvider{
		{Name: "my-ldap", Type: "ldap", Flows: []string{"cli_password", "browser_authcode"}},
		{Name: "my-oidc", Type: "oidc", Flows: []string{"browser_authcode"}},
	}})
}

func TestPasswordFlow(t *testing.T) {
	tests := []struct {
		name        string
		username    string
		password    string
		prompter    *prompter
		idpName     string
		idpType     string
		flow        string
		wantErr     string
		wantErrIs   error
		wantPrompts []string
	}{
		{name: "flow inferred from the identity provider, credentials given", idpName: "my-ldap", idpType: "ldap",
			username: fakeissuer.Username, password: fakeissuer.Password},
		{name: "explicit flow, prompts", idpName: "my-ldap", flow: oidclogin.FlowCLIPassword,
			prompter: &prompter{lines: make(chan string, 2)}, wantPrompts: []string{"Username: ", "Password: "}},
		{name: "wrong password", idpName: "my-ldap", username: fakeissuer.Username, password: "wrong-password",
			wantErr: "the issuer refused the login: access_denied: Incorrect username or password."},
		{name: "no credentials and no terminal", idpName: "my-ldap", wantErrIs: oidclogin.ErrNoCredentials},
		{name: "flow the identity provider lacks", idpName: "my-oidc", flow: oidclogin.FlowCLIPassword, username: "u", password: "p",
			wantErr: `identity provider "my-oidc" supports the login flows browser_authcode, not cli_password`},
		{name: "unknown identity provider", idpName: "nope", username: "u", password: "p",
			wantErr: `the Supervisor has no identity provider "nope"; it has "my-ldap" (ldap), "my-oidc" (oidc)`},
		{name: "identity provider of another type", idpName: "my-ldap", idpType: "oidc", username: "u", password: "p",
			wantErr: `no identity provider "my-ldap" of type oidc`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss := supervisor(t)
			var out syncbuffer.Buffer
			cfg := config(iss, &out, func(string) error { t.Error("a browser was opened"); return nil })
			cfg.UpstreamIdentityProviderName, cfg.UpstreamIdentityProviderType, cfg.Flow = tt.idpName, tt.idpType, tt.flow
			cfg.Username, cfg.Password = tt.username, tt.password
			cfg.SkipListen = true
			if tt.prompter != nil {
				cfg.Prompter = tt.prompter
				tt.prompter.lines <- fakeissuer.Username
				tt.prompter.lines <- fakeissuer.Password
			}
			tok, err := login(t, cfg)
			if tt.wantErr != "" || tt.wantErrIs != nil {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.wantErrIs != nil && !errors.Is(err, tt.wantErrIs)) {
					t.Fatalf("err = %v, want %q %v", err, tt.wantErr, tt.wantErrIs)
				}
				if strings.Contains(err.Error(), "wrong-password") {
					t.Errorf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkIdentity(t, tok, clientID)
			q := iss.Authorizations()[0]
			if q.Get("pinniped_idp_name") != "my-ldap" || q.Get("pinniped_idp_type") != "ldap" || q.Get("response_mode") != "" {
				t.Errorf("authorization request %v", q)
			}
			if tt.prompter != nil && !slices.Equal(tt.prompter.prompts, tt.wantPrompts) {
				t.Errorf("prompts = %q, want %q", tt.prompter.prompts, tt.wantPrompts)
			}
		})
	}
}

func TestTokenExchange(t *testing.T) {
	iss := supervisor(t)
	cache := newMemCache()
	var out syncbuffer.Buffer
	cfg := config(iss, &out, nil)
	cfg.UpstreamIdentityProviderName = "my-ldap"
	cfg.Username, cfg.Password = fakeissuer.Username, fakeissuer.Password
	cfg.RequestAudience = "cluster-1"
	cfg.SessionCache = cache

	tok, err := login(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkIdentity(t, tok, "cluster-1")
	if tok.AccessToken != nil || tok.RefreshToken != nil {
		t.Error("the exchanged token should carry only the ID token")
	}
	if aud := cache.only(t).IDToken.Claims["aud"]; aud != clientID {
		t.Errorf("the cached session's ID token is for %v, want the client's (the exchanged one is not cached)", aud)
	}
	// The cached access token is still good for another exchange.
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	if c := iss.Counts(); c.Authorizations != 1 || c.TokenExchanges != 2 {
		t.Errorf("counts %+v, want one login and two exchanges", c)
	}

	// An audience the session's ID token already has needs no exchange.
	cfg.RequestAudience = clientID
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	if c := iss.Counts(); c.TokenExchanges != 2 {
		t.Errorf("counts %+v, want no exchange for the client's own audience", c)
	}

	// A refused exchange says so, without the access token.
	cfg.RequestAudience = fakeissuer.RefusedAudiencePrefix + "cluster"
	_, err = login(t, cfg)
	if err == nil || !strings.Contains(err.Error(), `the token exchange for audience "refused-cluster" failed: the issuer answered access_denied: The audience is not allowed.`) ||
		strings.Contains(err.Error(), cache.only(t).AccessToken.Token) {
		t.Fatalf("err = %v", err)
	}
}

func TestIssuerWarningsAreShown(t *testing.T) {
	iss := fakeissuer.New(t, fakeissuer.Options{Warnings: []string{"your upstream session is short"}})
	var out syncbuffer.Buffer
	if _, err := login(t, config(iss, &out, (&browser{iss: iss}).open)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Warning: your upstream session is short\n") {
		t.Errorf("output lacks the warning:\n%s", out.String())
	}
}

func TestLoginErrors(t *testing.T) {
	iss := fakeissuer.New(t, fakeissuer.Options{})
	closed := fakeissuer.New(t, fakeissuer.Options{})
	closed.Close()
	tests := []struct {
		name    string
		change  func(*oidclogin.Config)
		ctx     func() (context.Context, context.CancelFunc)
		wantErr string
		wantIs  error
	}{
		// The system roots only; the handshake may take long on a loaded machine under -race,
		// and a timeout is not the error this case is about.
		{name: "untrusted CA", change: func(c *oidclogin.Config) {
			c.HTTPClient = &http.Client{Transport: &http.Transport{TLSHandshakeTimeout: time.Minute}}
		},
			wantIs: oidclogin.ErrUntrustedCertificate, wantErr: "OIDC discovery at " + iss.URL + " failed"},
		{name: "unreachable", change: func(c *oidclogin.Config) { c.Issuer = closed.URL },
			wantErr: "the issuer is unreachable from this machine"},
		{name: "plain http", change: func(c *oidclogin.Config) { c.Issuer = "http://issuer.example" }, wantErr: `the issuer "http://issuer.example" must be an https URL`},
		{name: "wrong issuer URL", change: func(c *oidclogin.Config) { c.Issuer += "/" }, wantErr: "did not match the issuer URL returned by provider"},
		{name: "no client", change: func(c *oidclogin.Config) { c.ClientID = "" }, wantErr: "a client ID is required"},
		{name: "unknown flow", change: func(c *oidclogin.Config) { c.Flow = "device_code" }, wantErr: `unknown login flow "device_code"`},
		{name: "identity provider at a plain issuer", change: func(c *oidclogin.Config) { c.UpstreamIdentityProviderName = "x" },
			wantErr: `an upstream identity provider ("x") can only be chosen at a Pinniped Supervisor`},
		{name: "nowhere to get the code", change: func(c *oidclogin.Config) { c.SkipListen = true },
			wantErr: "no way to receive the authorization code"},
		{name: "timeout", change: func(c *oidclogin.Config) { c.SkipBrowser = true },
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 300*time.Millisecond)
			},
			wantErr: "the login timed out: waiting for the authorization code"},
		{name: "cancelled", change: func(c *oidclogin.Config) { c.SkipBrowser = true },
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(300*time.Millisecond, cancel)
				return ctx, cancel
			},
			wantErr: "the login was cancelled: waiting for the authorization code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncbuffer.Buffer
			cfg := config(iss, &out, func(string) error { return nil })
			tt.change(&cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			_, err := oidclogin.Login(ctx, cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
				t.Fatalf("err = %v, want %q %v", err, tt.wantErr, tt.wantIs)
			}
		})
	}
}

func TestListenPortInUse(t *testing.T) {
	iss := fakeissuer.New(t, fakeissuer.Options{})
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	var out syncbuffer.Buffer
	cfg := config(iss, &out, (&browser{iss: iss}).open)
	cfg.ListenPort = uint16(port)
	_, err = login(t, cfg)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("could not listen for the browser's redirect on 127.0.0.1:%d", port)) {
		t.Fatalf("err = %v, want a listen error", err)
	}

	// With a terminal, the user can still paste the code.
	p := &prompter{lines: make(chan string, 1)}
	pr, pw := io.Pipe()
	defer pw.Close()
	cfg.Out, cfg.Prompter, cfg.SkipBrowser = pw, p, true
	go func() {
		p.lines <- authorize(t, iss, readURL(pr)).String()
	}()
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A Supervisor's session_expires_in is kept with the refresh token; shortly before that time the
// user is warned that a login is near, and once the Supervisor ends the session, told why a new
// login starts.
func TestSessionEnd(t *testing.T) {
	iss := fakeissuer.New(t, fakeissuer.Options{SessionLength: 10 * time.Minute})
	b := &browser{iss: iss}
	var out syncbuffer.Buffer
	cache := newMemCache()
	cfg := config(iss, &out, b.open)
	cfg.SessionCache = cache
	tok, err := login(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	end := tok.RefreshToken.SessionExpiry.Time
	if d := time.Until(end); d > 10*time.Minute || d < 9*time.Minute {
		t.Fatalf("session expiry %v, want ten minutes from now", end)
	}
	if got := cache.only(t).RefreshToken.SessionExpiry; !got.Equal(&tok.RefreshToken.SessionExpiry) {
		t.Errorf("the cache holds session expiry %v, want %v", got, tok.RefreshToken.SessionExpiry)
	}
	warning := "Your session at " + iss.URL + " ends at " + end.Local().Format("15:04 MST") + " (in "
	if !strings.Contains(out.String(), warning) {
		t.Errorf("no warning that the session ends within %v:\n%s", oidclogin.SessionEndWarning, out.String())
	}

	// Earlier than the warning's time, nothing is said.
	var early syncbuffer.Buffer
	cfg.Out = &early
	cfg.Now = func() time.Time { return end.Add(-oidclogin.SessionEndWarning - time.Minute) }
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(early.String(), "Your session") {
		t.Errorf("a warning %v before the session's end:\n%s", oidclogin.SessionEndWarning+time.Minute, early.String())
	}

	// The Supervisor refuses the refresh after the end: the user learns why the login starts.
	short := fakeissuer.New(t, fakeissuer.Options{SessionLength: time.Second})
	var ended syncbuffer.Buffer
	shortCache := newMemCache()
	cfg = config(short, &ended, (&browser{iss: short}).open)
	cfg.SessionCache = shortCache
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	shortCache.only(t).IDToken.Expiry = metav1.NewTime(time.Now().Add(-time.Minute))
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	if c := short.Counts(); c.Refreshes != 1 || c.Authorizations != 2 {
		t.Errorf("counts %+v; want a refused refresh and a new login", c)
	}
	if want := "Your session at " + short.URL + " has ended: the session reached its maximum length of 1s. Logging in again."; !strings.Contains(ended.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, ended.String())
	}
}

// A cached access token whose session has ended is refused at the exchange: the user is told why,
// and a new login follows, as after a refused refresh.
func TestExchangeAfterSessionEnd(t *testing.T) {
	iss := fakeissuer.New(t, fakeissuer.Options{SessionLength: time.Second})
	var out syncbuffer.Buffer
	b := &browser{iss: iss}
	cfg := config(iss, &out, b.open)
	cfg.SessionCache = newMemCache()
	cfg.RequestAudience = "cluster-1"
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	tok, err := login(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkIdentity(t, tok, "cluster-1")
	if c := iss.Counts(); c.Authorizations != 2 || c.Refreshes != 0 || c.TokenExchanges != 3 {
		t.Errorf("counts %+v; want the cached access token's exchange refused, then a login and its exchange", c)
	}
	if want := "Your session at " + iss.URL + " has ended: the session reached its maximum length of 1s. Logging in again."; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}

// A session ended at the issuer while the CLI held an access token of it (an administrator's
// revocation, a sign-out from another machine) has that token refused at the exchange: the CLI
// says so and logs in again.
func TestExchangeAfterSessionRevoked(t *testing.T) {
	iss := fakeissuer.New(t, fakeissuer.Options{})
	var out syncbuffer.Buffer
	b := &browser{iss: iss}
	cfg := config(iss, &out, b.open)
	cfg.SessionCache = newMemCache()
	cfg.RequestAudience = "cluster-1"
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	iss.EndSessions()
	tok, err := login(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkIdentity(t, tok, "cluster-1")
	if c := iss.Counts(); c.Authorizations != 2 || c.TokenExchanges != 3 {
		t.Errorf("counts %+v; want the cached access token's exchange refused, then a login and its exchange", c)
	}
	if want := "Your session at " + iss.URL + " has ended: it was ended at the issuer (signed out elsewhere, or revoked). Logging in again."; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}

// Logout revokes the session's refresh token at the issuer and removes the session from the
// cache: the next login starts from scratch. Where the issuer has no revocation endpoint, the
// session still leaves the cache, and the error says the issuer keeps it.
func TestLogout(t *testing.T) {
	iss := fakeissuer.New(t, fakeissuer.Options{Revocation: true})
	var out syncbuffer.Buffer
	b := &browser{iss: iss}
	cache := newMemCache()
	cfg := config(iss, &out, b.open)
	cfg.SessionCache = cache
	tok, err := login(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if found, err := oidclogin.Logout(ctx, cfg); !found || err != nil {
		t.Fatalf("Logout = %v, %v; want the session found and revoked", found, err)
	}
	if c := iss.Counts(); c.Revocations != 1 {
		t.Errorf("counts %+v, want one revocation", c)
	}
	// The revoked refresh token no longer refreshes at the issuer.
	cache.PutToken(oidclogin.SessionKeyOf(cfg), &oidclogin.Token{RefreshToken: tok.RefreshToken})
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	if c := iss.Counts(); c.Refreshes != 1 || c.Authorizations != 2 {
		t.Errorf("counts %+v; want the revoked refresh token refused and a new login", c)
	}
	if found, err := oidclogin.Logout(ctx, cfg); !found || err != nil {
		t.Fatalf("second Logout = %v, %v", found, err)
	}
	if found, err := oidclogin.Logout(ctx, cfg); found || err != nil {
		t.Errorf("Logout without a session = %v, %v; want nothing found and no error", found, err)
	}

	plain := fakeissuer.New(t, fakeissuer.Options{})
	plainCache := newMemCache()
	cfg = config(plain, &out, (&browser{iss: plain}).open)
	cfg.SessionCache = plainCache
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	if found, err := oidclogin.Logout(ctx, cfg); !found || !errors.Is(err, oidclogin.ErrNoRevocationEndpoint) {
		t.Errorf("Logout at an issuer without revocation = %v, %v; want ErrNoRevocationEndpoint", found, err)
	}
	if plainCache.GetToken(oidclogin.SessionKeyOf(cfg)) != nil {
		t.Error("the session is still cached")
	}
}
