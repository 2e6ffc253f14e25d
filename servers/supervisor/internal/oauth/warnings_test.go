package oauth

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// refreshWarnings refreshes refreshToken as client id (secret empty for pinniped-cli) and returns
// the response's Warning headers.
func (h *harness) refreshWarnings(refreshToken, id, secret string) []string {
	h.t.Helper()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}}
	if secret == "" {
		form.Set("client_id", id)
	}
	req, err := http.NewRequest(http.MethodPost, h.issuerURL+provider.TokenPath, strings.NewReader(form.Encode()))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if secret != "" {
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := h.server.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("refresh: %s", resp.Status)
	}
	return resp.Header.Values("Warning")
}

// As Pinniped's Supervisor, a refresh that changed the user's groups tells the CLI, which prints
// the Warning headers; other clients are not told.
func TestRefreshWarnsTheCLIOfGroupChanges(t *testing.T) {
	h := newHarness(t, nil)
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	h.upstream.mu.Lock()
	h.upstream.groups = []string{"seals", "dolphins", "orcas"}
	h.upstream.mu.Unlock()
	want := []string{
		`299 - "User \"pinny@example.com\" has been added to the following groups: [\"dolphins\" \"orcas\"]"`,
		`299 - "User \"pinny@example.com\" has been removed from the following groups: [\"walruses\"]"`,
	}
	if got := h.refreshWarnings(tok.RefreshToken, provider.PinnipedCLIClientID, ""); !slices.Equal(got, want) {
		t.Errorf("Warning headers\n%q\nwant\n%q", got, want)
	}

	h.addOIDCClient(clientID, fullSpec(), clientSecret)
	cfg := h.webapp(provider.ScopeOpenID, provider.ScopeOfflineAccess, provider.ScopeUsername, provider.ScopeGroups)
	l = h.loginAs(cfg)
	tok, err = cfg.Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	h.upstream.mu.Lock()
	h.upstream.groups = []string{"seals"}
	h.upstream.mu.Unlock()
	if got := h.refreshWarnings(tok.RefreshToken, clientID, clientSecret); len(got) != 0 {
		t.Errorf("an OIDCClient was warned: %q", got)
	}
}
