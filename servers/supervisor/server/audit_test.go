package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"sealion.dev/core/testing/syncbuffer"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/discovery"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
	"sealion.dev/servers/supervisor/internal/tokenseal"
)

// lockedBuffer is an AuditOutput the test reads while the server writes.
type lockedBuffer struct{ syncbuffer.Buffer }

// events waits for n events and returns them, decoded.
func (l *lockedBuffer) events(t *testing.T, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := l.String()
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if out != "" && len(lines) >= n || time.Now().After(deadline) {
			var events []map[string]any
			for _, line := range lines {
				var ev map[string]any
				if line != "" && json.Unmarshal([]byte(line), &ev) != nil {
					t.Fatalf("not JSON: %s", line)
				}
				if ev != nil {
					events = append(events, ev)
				}
			}
			if len(events) != n {
				t.Fatalf("%d events, want %d:\n%s", len(events), n, out)
			}
			return events
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// auditedServer serves handler on loopback with the audit settings of file, and returns its URL
// and the audit log.
func auditedServer(t *testing.T, file string, handler func(c CompletedConfig) http.Handler) (string, *lockedBuffer) {
	t.Helper()
	c, _ := testConfig(t, minimalFile+file+`endpoints:
  https: {network: disabled}
  http: {network: tcp, address: "127.0.0.1:0"}
`)
	c.ShutdownDelay = time.Millisecond
	log := &lockedBuffer{}
	c.AuditOutput = log
	cc := c.Complete()
	listeners, err := cc.listen(handler(cc), nil, &readiness{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	listeners[0].serve(ctx, errc)
	t.Cleanup(func() { cancel(); <-errc })
	return "http://" + listeners[0].ln.Addr().String(), log
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp
}

// Each request is audited under a new audit ID, which the response's Audit-ID header returns and
// the endpoints' own events carry; a redirect's parameters are redacted but errors; /healthz is
// not audited by default.
func TestHTTPRequestsAudited(t *testing.T) {
	url, log := auditedServer(t, "", func(c CompletedConfig) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.audit.Event(r.Context(), "Inner", audit.Fields{})
			http.Redirect(w, r, "http://127.0.0.1/callback?code=pin_ac_secret&state=st&error=access_denied", http.StatusSeeOther)
		})
	})
	if resp := get(t, url+"/healthz"); resp.StatusCode != http.StatusOK || resp.Header.Get("Audit-ID") != "" {
		t.Fatalf("healthz: %d, Audit-ID %q", resp.StatusCode, resp.Header.Get("Audit-ID"))
	}
	req, _ := http.NewRequest(http.MethodGet, url+"/issuer/oauth2/authorize?client_id=x", nil)
	req.Header.Set("Audit-ID", "forged")
	req.Header.Set("User-Agent", "test-agent")
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	id := resp.Header.Get("Audit-ID")
	if len(id) != 36 {
		t.Fatalf("Audit-ID %q, want a new UUID", id)
	}
	events := log.events(t, 3)
	for i, want := range []string{"HTTP Request Received", "Inner", "HTTP Request Completed"} {
		if events[i]["message"] != want || events[i]["auditID"] != id || events[i]["auditEvent"] != true {
			t.Errorf("event %d: %v, want %s under audit ID %s", i, events[i], want, id)
		}
	}
	received, completed := events[0], events[2]
	if received["method"] != "GET" || received["path"] != "/issuer/oauth2/authorize" || received["proto"] != "HTTP/1.1" ||
		received["userAgent"] != "test-agent" || received["host"] == nil || received["serverName"] != "" ||
		len(received["sourceIPs"].([]any)) != 1 || received["sourceIPs"].([]any)[0] != "127.0.0.1" {
		t.Errorf("received: %v", received)
	}
	if completed["responseStatus"] != float64(http.StatusSeeOther) || completed["path"] != "/issuer/oauth2/authorize" || completed["latency"] == nil ||
		completed["location"] != "http://127.0.0.1/callback?code=redacted&error=access_denied&state=redacted" {
		t.Errorf("completed: %v", completed)
	}
}

// With audit.logInternalPaths, the probes' requests are audited too.
func TestHealthzAuditedWhenAsked(t *testing.T) {
	url, log := auditedServer(t, "audit: {logInternalPaths: enabled}\n", func(CompletedConfig) http.Handler { return http.NotFoundHandler() })
	resp := get(t, url+"/healthz")
	events := log.events(t, 2)
	if resp.Header.Get("Audit-ID") == "" || events[0]["path"] != "/healthz" || events[1]["responseStatus"] != float64(200) ||
		events[1]["location"] != "no location header" {
		t.Errorf("events %v", events)
	}
}

func TestRedactLocation(t *testing.T) {
	for in, want := range map[string]string{
		"":                                   "no location header",
		"http://[::1":                        "unparsable location header",
		"/login?err=incorrect_username":      "/login?err=incorrect_username",
		"http://x/cb#access_token=t&state=s": "http://x/cb#access_token=redacted&state=redacted",
	} {
		if got := redactLocation(in); got != want {
			t.Errorf("redactLocation(%q) = %q, want %q", in, got, want)
		}
	}
}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Every response of the FederationDomains' endpoints carries an Audit-ID, errors and 404s as
// much as successes, and a new one each time: the endpoints mounted as the server mounts them,
// behind the server's listener.
func TestAuditIDOnEveryResponse(t *testing.T) {
	secrets := kubefake.NewClientset().CoreV1().Secrets("supervisor")
	registry := &connectors.Registry{}
	mux := issuer.NewMux(discovery.Endpoints{}, oauth.New(sessions.NewStorage(secrets, registry, tokenseal.NewRing()), registry))
	base, _ := auditedServer(t, "", func(CompletedConfig) http.Handler { return mux })
	if err := mux.Set([]*issuer.Issuer{testIssuer(t, "fd", base+"/fd")}); err != nil {
		t.Fatal(err)
	}
	authorize := url.Values{"client_id": {"pinniped-cli"}, "redirect_uri": {"http://127.0.0.1:4242/callback"}, "response_type": {"code"},
		"scope": {"openid"}, "state": {"some-long-state"}, "code_challenge_method": {"S256"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())}}
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	seen := map[string]bool{}
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{http.MethodGet, "/fd/.well-known/openid-configuration", "", http.StatusOK},
		{http.MethodPost, "/fd/.well-known/openid-configuration", "", http.StatusMethodNotAllowed},
		{http.MethodGet, "/fd/jwks.json", "", http.StatusOK},
		{http.MethodGet, "/fd/v1alpha1/pinniped_identity_providers", "", http.StatusOK},
		{http.MethodGet, "/fd/oauth2/authorize?" + authorize.Encode(), "", http.StatusSeeOther}, // no identity provider: an error redirect
		{http.MethodGet, "/fd/oauth2/authorize?client_id=nobody", "", http.StatusUnauthorized},
		{http.MethodPost, "/fd/oauth2/authorize", "%zz", http.StatusBadRequest},
		{http.MethodGet, "/fd/choose_identity_provider", "", http.StatusUnauthorized},
		{http.MethodGet, "/fd/login?state=bad", "", http.StatusBadRequest},
		{http.MethodPost, "/fd/login", "state=bad", http.StatusBadRequest},
		{http.MethodGet, "/fd/callback?state=bad", "", http.StatusBadRequest},
		{http.MethodPost, "/fd/oauth2/token", "grant_type=authorization_code&code=bad", http.StatusBadRequest},
		{http.MethodGet, "/fd/no-such-endpoint", "", http.StatusNotFound},
		{http.MethodGet, "/", "", http.StatusNotFound},
	} {
		req, err := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.method == http.MethodPost {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		id := resp.Header.Get("Audit-ID")
		if resp.StatusCode != c.status || !uuidPattern.MatchString(id) || seen[id] {
			t.Errorf("%s %s: %s with Audit-ID %q; want %d with a new UUID", c.method, c.path, resp.Status, id, c.status)
		}
		seen[id] = true
	}
}
