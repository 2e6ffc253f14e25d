package oauth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// countingDirectory counts the password checks that reach the directory.
type countingDirectory struct {
	*fakeDirectory
	mu              sync.Mutex
	authentications int
}

func (d *countingDirectory) Authenticate(ctx context.Context, login connectors.Login, username, password string) (*connectors.Identity, error) {
	d.mu.Lock()
	d.authentications++
	d.mu.Unlock()
	return d.fakeDirectory.Authenticate(ctx, login, username, password)
}

func (d *countingDirectory) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.authentications
}

func newCountingLDAPHarness(t *testing.T) (*harness, *countingDirectory) {
	dir := &countingDirectory{fakeDirectory: newFakeDirectory()}
	dir.update(func(users map[string]*directoryUser) { users["walrus"] = &directoryUser{password: "walrus-password"} })
	ups := &fakeUpstreams{}
	ups.add(issuer.TypeLDAP, "corp-ldap", dir)
	return newHarnessWith(t, ups, ldapIDP(issuer.TypeLDAP)), dir
}

func TestCLIPasswordFlowRateLimit(t *testing.T) {
	h, dir := newCountingLDAPHarness(t)
	for i := range loginBurst {
		_, loc := h.passwordAuthorize(newLogin(), ldapIDPName, "pinny", fmt.Sprint("guess-", i))
		if loc == nil || loc.Query().Get("error") != "access_denied" || strings.Contains(loc.String(), "guess-") {
			t.Fatalf("guess %d: redirect %v; want access_denied without the password", i, loc)
		}
	}
	if dir.count() != loginBurst {
		t.Fatalf("the directory checked %d passwords, want %d", dir.count(), loginBurst)
	}

	// Now even the right password is refused, without asking the directory.
	resp, loc := h.passwordAuthorize(newLogin(), "Corp LDAP", "Pinny", "pinny-password")
	if resp.StatusCode != http.StatusFound || loc == nil || !strings.HasPrefix(loc.String(), cliCallback+"?") {
		t.Fatalf("got %s to %v; want 302 Found to the CLI", resp.Status, loc)
	}
	q := loc.Query()
	if q.Get("error") != "access_denied" || !strings.Contains(q.Get("error_description"), "Too many login attempts") || q.Get("code") != "" {
		t.Errorf("limited attempt answered %v; want access_denied saying there were too many attempts", q)
	}
	if strings.Contains(loc.String(), "pinny-password") {
		t.Errorf("the answer holds the password: %s", loc)
	}
	if dir.count() != loginBurst {
		t.Errorf("the limited attempt reached the directory (%d checks)", dir.count())
	}
	if got := h.storedTypes(); len(got) != 0 {
		t.Errorf("refused attempts stored %v", got)
	}

	// Another user is not affected.
	_, loc = h.passwordAuthorize(newLogin(), ldapIDPName, "walrus", "walrus-password")
	if loc == nil || loc.Query().Get("code") == "" {
		t.Errorf("another user's login: redirect %v, want a code", loc)
	}
}

func TestLoginFormRateLimit(t *testing.T) {
	h, dir := newCountingLDAPHarness(t)
	l := newLogin()
	resp, _ := h.get(h.cli().AuthCodeURL(l.state, oidc.Nonce(l.nonce), oauth2.S256ChallengeOption(l.verifier)))
	state := resp.Request.URL.Query().Get("state")
	if state == "" {
		t.Fatalf("authorize did not lead to the login form: %s", resp.Request.URL)
	}
	post := func(username, password string) (*http.Response, string) {
		t.Helper()
		resp, err := h.browser.PostForm(h.issuerURL+provider.LoginPath, url.Values{"state": {state}, "username": {username}, "password": {password}})
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		_, page := h.get(resp.Request.URL.String())
		return resp, page
	}
	for i := range loginBurst {
		if resp, page := post("pinny", fmt.Sprint("guess-", i)); resp.Request.URL.Query().Get("err") != loginErrorCredentials || strings.Contains(page, "guess-") {
			t.Fatalf("guess %d led to %s", i, resp.Request.URL)
		}
	}
	resp, page := post("pinny", "pinny-password")
	if resp.Request.URL.Query().Get("err") != loginErrorTooMany || !strings.Contains(page, "Too many login attempts, try again later.") ||
		strings.Contains(page, "pinny-password") {
		t.Errorf("limited attempt led to %s:\n%s", resp.Request.URL, page)
	}
	if dir.count() != loginBurst {
		t.Errorf("the limited attempt reached the directory (%d checks)", dir.count())
	}
	if got := h.storedTypes(); len(got) != 0 {
		t.Errorf("refused attempts stored %v", got)
	}

	// Another user logs in on the same form.
	resp, err := h.browser.PostForm(h.issuerURL+provider.LoginPath, url.Values{"state": {state}, "username": {"walrus"}, "password": {"walrus-password"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if loc, err := resp.Location(); err != nil || loc.Query().Get("code") == "" {
		t.Errorf("another user's login answered %s to %v; want a code", resp.Status, loc)
	}
}
