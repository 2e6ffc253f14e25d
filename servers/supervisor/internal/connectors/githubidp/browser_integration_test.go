package githubidp_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"sealion.dev/core/testing/testdeps"
	"sealion.dev/fixtures/browser"
	"sealion.dev/fixtures/github"
	"sealion.dev/servers/supervisor/internal/connectors/githubidp"
)

// githubForm drives the double's login form, whose selectors match github.com's.
var githubForm = browser.Form{Username: github.FormLogin, Password: github.FormPassword, Submit: github.FormSubmit, Error: github.FormError}

// TestBrowserLogin logs in through headless Chromium, once through the login form and once as
// the preconfigured signed-in user, and reads the identity with the Supervisor's client.
func TestBrowserLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts headless Chromium as a process; skipped under -short")
	}
	chromium, err := browser.FindChromium()
	testdeps.Require(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	for _, loggedIn := range []string{"", "alice"} {
		t.Run(fmt.Sprintf("logged in %q", loggedIn), func(t *testing.T) {
			s, err := github.Start(ctx, github.Options{Users: []github.User{alice}, LoggedIn: loggedIn})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			b, err := browser.Start(ctx, browser.Options{ExecPath: chromium, TrustedCABundle: s.CABundle})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = b.Close() }()

			redirectURI := loopbackCallback(t)
			p := newProvider(t, s, githubidp.Config{AllowedOrganizations: []string{"seals"}})
			began := time.Now()
			landed, err := b.Login(ctx, browser.Login{
				AuthorizeURL:   p.AuthorizeURL(redirectURI, "the-state"),
				Username:       alice.Login,
				Password:       alice.Password,
				RedirectPrefix: redirectURI,
				Form:           githubForm,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("browser login took %s", time.Since(began))
			u, err := url.Parse(landed)
			if err != nil || u.Query().Get("state") != "the-state" {
				t.Fatalf("landed on %q", landed)
			}
			tok, err := p.ExchangeAuthcode(ctx, u.Query().Get("code"), redirectURI)
			if err != nil {
				t.Fatal(err)
			}
			id, err := p.GetUser(ctx, tok, "gh")
			if err != nil {
				t.Fatal(err)
			}
			if id.Username != "alice:1001" {
				t.Errorf("username %q", id.Username)
			}
		})
	}
}

// loopbackCallback answers the redirect on a free loopback port, as a Supervisor callback would.
func loopbackCallback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "logged in")
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return fmt.Sprintf("http://%s/callback", ln.Addr())
}
