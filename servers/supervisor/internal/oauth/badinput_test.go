package oauth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// Requests that must fail: each gets a clear OAuth 2.0 error, stores no session and echoes no
// secret (the code verifier, the upstream's client secret or address).

// post POSTs body to the issuer's path and returns the response and its body.
func (h *harness) post(path, contentType, body string) (*http.Response, string) {
	h.t.Helper()
	resp, err := h.server.Client().Post(h.issuerURL+path, contentType, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// leaks reports which of the secrets body shows.
func (h *harness) leaks(body string, secrets ...string) []string {
	var shown []string
	for _, s := range append(secrets, "upstream-secret", h.upstream.server.URL) {
		if s != "" && strings.Contains(body, s) {
			shown = append(shown, s)
		}
	}
	return shown
}

func TestTokenEndpointRejects(t *testing.T) {
	const form = "application/x-www-form-urlencoded"
	redeem := func(l login) url.Values {
		return url.Values{"grant_type": {provider.GrantAuthorizationCode}, "code": {l.code}, "code_verifier": {l.verifier},
			"client_id": {provider.PinnipedCLIClientID}, "redirect_uri": {cliCallback}}
	}
	tests := []struct {
		name        string
		method      string // default POST
		contentType string // default form
		body        func(l login) string
		wantStatus  int
		wantError   string
	}{
		{name: "wrong PKCE verifier", body: func(l login) string {
			v := redeem(l)
			v.Set("code_verifier", oauth2.GenerateVerifier())
			return v.Encode()
		}, wantStatus: http.StatusBadRequest, wantError: "invalid_grant"},
		{name: "missing PKCE verifier", body: func(l login) string {
			v := redeem(l)
			v.Del("code_verifier")
			return v.Encode()
		}, wantStatus: http.StatusBadRequest, wantError: "invalid_grant"},
		{name: "unknown client", body: func(l login) string {
			v := redeem(l)
			v.Set("client_id", "evil-client")
			return v.Encode()
		}, wantStatus: http.StatusUnauthorized, wantError: "invalid_client"},
		{name: "redirect URI not the authorize request's", body: func(l login) string {
			v := redeem(l)
			v.Set("redirect_uri", "https://evil.example.com/callback")
			return v.Encode()
		}, wantStatus: http.StatusBadRequest, wantError: "invalid_grant"},
		{name: "made-up code", body: func(l login) string {
			v := redeem(l)
			v.Set("code", "made-up-code")
			return v.Encode()
		}, wantStatus: http.StatusBadRequest, wantError: "invalid_grant"},
		{name: "grant type the Supervisor does not serve", body: func(l login) string {
			v := redeem(l)
			v.Set("grant_type", "client_credentials")
			return v.Encode()
		}, wantStatus: http.StatusBadRequest, wantError: "invalid_request"},
		{name: "no grant type", body: func(l login) string {
			v := redeem(l)
			v.Del("grant_type")
			return v.Encode()
		}, wantStatus: http.StatusBadRequest, wantError: "invalid_request"},
		{name: "GET", method: http.MethodGet, body: func(login) string { return "" }, wantStatus: http.StatusBadRequest, wantError: "invalid_request"},
		{name: "malformed form", body: func(l login) string { return redeem(l).Encode() + "&%zz" }, wantStatus: http.StatusBadRequest, wantError: "invalid_request"},
		{name: "JSON body", contentType: "application/json", body: func(l login) string {
			b, _ := json.Marshal(redeem(l))
			return string(b)
		}, wantStatus: http.StatusBadRequest, wantError: "invalid_request"},
		{name: "oversized body", body: func(l login) string {
			return redeem(l).Encode() + "&padding=" + strings.Repeat("a", maxRequestBody)
		}, wantStatus: http.StatusBadRequest, wantError: "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			l := h.login()
			method, contentType := http.MethodPost, form
			if tt.method != "" {
				method = tt.method
			}
			if tt.contentType != "" {
				contentType = tt.contentType
			}
			req, err := http.NewRequestWithContext(h.ctx, method, h.issuerURL+provider.TokenPath, strings.NewReader(tt.body(l)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", contentType)
			resp, err := h.server.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			var answer struct {
				Error       string `json:"error"`
				AccessToken string `json:"access_token"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
				t.Fatalf("%s: the answer is not JSON: %v", resp.Status, err)
			}
			if resp.StatusCode != tt.wantStatus || answer.Error != tt.wantError || answer.AccessToken != "" {
				t.Errorf("got %s %+v; want %d %s", resp.Status, answer, tt.wantStatus, tt.wantError)
			}
			raw, _ := json.Marshal(answer)
			if shown := h.leaks(string(raw), l.verifier, l.code); len(shown) != 0 {
				t.Errorf("the answer shows %v", shown)
			}
			if got := h.storedTypes(); got[typeAccessToken] != 0 || got[typeRefreshToken] != 0 {
				t.Errorf("a refused token request stored %v", got)
			}
		})
	}
}

func TestAuthorizeRejectsUnknownClientAndBadRequests(t *testing.T) {
	h := newHarness(t, nil)
	verifier := oauth2.GenerateVerifier()
	noFollow := &http.Client{Transport: h.browser.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	t.Run("unknown client", func(t *testing.T) {
		cfg := h.cli()
		cfg.ClientID = "evil-client"
		resp, err := noFollow.Get(cfg.AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(verifier)))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if loc, _ := resp.Location(); loc != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("got %s to %v; want 401 and no redirect", resp.Status, loc)
		}
	})

	t.Run("implicit flow", func(t *testing.T) {
		authURL := h.cli().AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(verifier), oidc.Nonce("some-nonce-value"),
			oauth2.SetAuthURLParam("response_type", "id_token token"))
		loc, resp := h.authorize(authURL)
		if loc == nil {
			t.Fatalf("got %s; want a redirect to the CLI with an error", resp.Status)
		}
		q := loc.Query()
		if q.Get("error") != "unsupported_response_type" || q.Get("code") != "" || loc.Fragment != "" {
			t.Errorf("redirect %v; want unsupported_response_type and no code or token", loc)
		}
	})

	t.Run("malformed query", func(t *testing.T) {
		resp, err := noFollow.Get(h.cli().AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(verifier)) + "&%zz")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		if loc, _ := resp.Location(); loc != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "invalid_request") {
			t.Errorf("got %s to %v %.200s; want 400 invalid_request and no redirect", resp.Status, loc, body)
		}
	})

	t.Run("oversized POST", func(t *testing.T) {
		q := url.Values{"client_id": {provider.PinnipedCLIClientID}, "response_type": {"code"}, "redirect_uri": {cliCallback},
			"scope": {"openid"}, "state": {"some-state-value"}, "padding": {strings.Repeat("a", maxRequestBody)}}
		resp, body := h.post(provider.AuthorizePath, "application/x-www-form-urlencoded", q.Encode())
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "invalid_request") {
			t.Errorf("got %s %.200s; want 400 invalid_request", resp.Status, body)
		}
	})

	if got := h.storedTypes(); len(got) != 0 {
		t.Errorf("refused authorize requests stored %v", got)
	}
}

func TestLoginEndpointRejects(t *testing.T) {
	h, _ := newLDAPHarness(t, "ldap")
	l := newLogin()
	resp, _ := h.get(h.cli().AuthCodeURL(l.state, oidc.Nonce(l.nonce), oauth2.S256ChallengeOption(l.verifier)))
	state := resp.Request.URL.Query().Get("state")
	if state == "" {
		t.Fatalf("authorize did not lead to the login form: %s", resp.Request.URL)
	}
	tests := []struct {
		name, body string
		wantStatus int
	}{
		{name: "oversized form", body: url.Values{"state": {state}, "username": {"pinny"}, "password": {strings.Repeat("p", maxRequestBody)}}.Encode(),
			wantStatus: http.StatusRequestEntityTooLarge},
		{name: "malformed form", body: "state=" + url.QueryEscape(state) + "&username=pinny&password=%zz", wantStatus: http.StatusBadRequest},
		{name: "forged state", body: url.Values{"state": {"forged"}, "username": {"pinny"}, "password": {"pinny-password"}}.Encode(), wantStatus: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(h.ctx, http.MethodPost, h.issuerURL+provider.LoginPath, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := h.browser.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("got %s %.200s; want %d", resp.Status, body, tt.wantStatus)
			}
			if shown := h.leaks(string(body), "pinny-password", "ppppppppp"); len(shown) != 0 {
				t.Errorf("the answer shows %v", shown)
			}
		})
	}
	if got := h.storedTypes(); len(got) != 0 {
		t.Errorf("refused logins stored %v", got)
	}
}
