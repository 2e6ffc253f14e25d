package sessioncache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"sealion.dev/cli/pkg/oidclogin"
)

var start = time.Date(2025, 7, 1, 12, 0, 0, 0, time.UTC)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

var key = oidclogin.SessionKey{
	Issuer:      "https://issuer.example",
	ClientID:    "pinniped-cli",
	Scopes:      []string{"groups", "offline_access", "openid"},
	RedirectURI: "http://localhost:0/callback",
}

func tokens(id string) *oidclogin.Token {
	return &oidclogin.Token{
		AccessToken:  &oidclogin.AccessToken{Token: "access-" + id, Type: "Bearer", Expiry: metav1.NewTime(start.Add(2 * time.Minute))},
		RefreshToken: &oidclogin.RefreshToken{Token: "refresh-" + id},
		IDToken: &oidclogin.IDToken{Token: "id-" + id, Expiry: metav1.NewTime(start.Add(time.Hour)),
			Claims: map[string]any{"sub": "s", "groups": []any{"seals", "walruses"}}},
	}
}

func TestPutAndGet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pinniped", "sessions.yaml")
	c := New(path, WithClock((&clock{start}).now))
	c.PutToken(key, tokens("1"))
	other := key
	other.UpstreamProviderName = "my-ldap"
	c.PutToken(other, tokens("2"))

	if got := c.GetToken(key); !sameJSON(got, tokens("1")) {
		t.Errorf("GetToken = %+v, want %+v", got, tokens("1"))
	}
	if got := c.GetToken(other); got == nil || got.IDToken.Token != "id-2" {
		t.Errorf("the session of another identity provider = %+v", got)
	}
	fewer := key
	fewer.Scopes = []string{"openid"}
	if got := c.GetToken(fewer); got != nil {
		t.Errorf("other scopes hit %+v", got)
	}
	c.PutToken(key, tokens("3"))
	if got := c.GetToken(key); got.IDToken.Token != "id-3" {
		t.Errorf("after replacing, GetToken = %+v", got)
	}

	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	if _, err := os.Stat(path + ".lock"); err != nil {
		t.Errorf("no lock file: %v", err)
	}
}

// TestFileFormat checks the layout the Pinniped CLI reads and writes.
func TestFileFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.yaml")
	const upstreamStyle = `apiVersion: config.supervisor.pinniped.dev/v1alpha1
kind: SessionCache
sessions:
- creationTimestamp: "2025-06-30T08:00:00Z"
  key:
    clientID: pinniped-cli
    issuer: https://issuer.example
    redirect_uri: http://localhost:0/callback
    scopes: [groups, offline_access, openid]
  lastUsedTimestamp: "2025-06-30T09:00:00Z"
  tokens:
    access: {expiryTimestamp: "2025-07-01T12:02:00Z", token: access-1, type: Bearer}
    id:
      claims: {groups: [seals, walruses], sub: s}
      expiryTimestamp: "2025-07-01T13:00:00Z"
      token: id-1
    refresh: {token: refresh-1}
`
	if err := os.WriteFile(path, []byte(upstreamStyle), 0o600); err != nil {
		t.Fatal(err)
	}
	c := New(path, WithClock((&clock{start}).now))
	if got := c.GetToken(key); !sameJSON(got, tokens("1")) {
		t.Fatalf("GetToken = %+v, want %+v", got, tokens("1"))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	s := f["sessions"].([]any)[0].(map[string]any)
	if s["creationTimestamp"] != "2025-06-30T08:00:00Z" || s["lastUsedTimestamp"] != "2025-07-01T12:00:00Z" {
		t.Errorf("timestamps after a hit: %v, %v", s["creationTimestamp"], s["lastUsedTimestamp"])
	}
	if tok := s["tokens"].(map[string]any); tok["id"].(map[string]any)["token"] != "id-1" || tok["refresh"].(map[string]any)["token"] != "refresh-1" {
		t.Errorf("tokens written as %v", tok)
	}
}

func TestCorruptOrForeignFileIsReplaced(t *testing.T) {
	for name, content := range map[string]string{
		"corrupt":       "{{{ not yaml",
		"other kind":    "apiVersion: " + APIVersion + "\nkind: CredentialCache\ncredentials: []\n",
		"other version": "apiVersion: config.supervisor.pinniped.dev/v2\nkind: SessionCache\nsessions: []\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sessions.yaml")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			var reported []error
			c := New(path, WithClock((&clock{start}).now), WithErrorReporter(func(err error) { reported = append(reported, err) }))
			if got := c.GetToken(key); got != nil {
				t.Fatalf("GetToken = %+v, want a miss", got)
			}
			if len(reported) != 1 || !strings.Contains(reported[0].Error(), "so it is replaced") {
				t.Errorf("reported %v, want one note that the file is replaced", reported)
			}
			c.PutToken(key, tokens("1"))
			if got := c.GetToken(key); got == nil || got.IDToken.Token != "id-1" {
				t.Fatalf("after PutToken, GetToken = %+v", got)
			}
		})
	}
}

func TestIdleSessionsArePruned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.yaml")
	clk := &clock{start}
	c := New(path, WithClock(clk.now))
	c.PutToken(key, tokens("old"))
	clk.t = start.Add(80 * 24 * time.Hour)
	recent := key
	recent.ClientID = "other"
	c.PutToken(recent, tokens("recent"))
	clk.t = start.Add(91 * 24 * time.Hour)
	if got := c.GetToken(key); got != nil {
		t.Errorf("a session unused for 91 days is still there: %+v", got)
	}
	if got := c.GetToken(recent); got == nil {
		t.Error("a session used 11 days ago was pruned")
	}
}

func TestUnwritableCacheIsReported(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var reported []error
	c := New(filepath.Join(blocker, "sessions.yaml"), WithErrorReporter(func(err error) { reported = append(reported, err) }))
	c.PutToken(key, tokens("1"))
	if len(reported) != 1 || !strings.Contains(reported[0].Error(), "creating the session cache directory") {
		t.Errorf("reported %v", reported)
	}
}

func TestDefaultPath(t *testing.T) {
	if got := DefaultPath("/home/u", ""); got != "/home/u/.config/pinniped/sessions.yaml" {
		t.Errorf("DefaultPath = %s", got)
	}
	if got := DefaultPath("/home/u", "/xdg"); got != "/xdg/pinniped/sessions.yaml" {
		t.Errorf("DefaultPath with XDG_CONFIG_HOME = %s", got)
	}
}

// sameJSON compares as stored: times keep their instant, not their location.
func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
