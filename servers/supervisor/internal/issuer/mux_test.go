package issuer

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// echo mounts one route that answers with the issuer's name.
type echo struct{ path string }

func (e echo) Mount(r Router, iss *Issuer) {
	r.Handle(e.path, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, iss.Name)
	}))
}

func get(t *testing.T, h http.Handler, host, path string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "https://"+host+path, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func TestMuxRoutes(t *testing.T) {
	m := NewMux(echo{"/jwks.json"})
	if err := m.Set([]*Issuer{
		{Name: "root", URL: "https://Example.com"},
		{Name: "a", URL: "https://example.com/a"},
		{Name: "slash", URL: "https://example.com/b/"},
		{Name: "port", URL: "https://example.com:8443/a"},
		{Name: "default-port", URL: "https://other.example.com:443/x"},
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host, path string
		want       string // issuer name; "" for 404
	}{
		{"example.com", "/jwks.json", "root"},
		{"EXAMPLE.COM", "/jwks.json", "root"},
		{"example.com:443", "/jwks.json", "root"},
		{"example.com", "/a/jwks.json", "a"},
		{"example.com", "/b/jwks.json", "slash"},
		{"example.com:8443", "/a/jwks.json", "port"},
		{"other.example.com", "/x/jwks.json", "default-port"},
		{"example.com", "/A/jwks.json", ""}, // paths are case-sensitive
		{"example.com", "/a/jwks.json/", ""},
		{"example.com", "/a", ""},
		{"example.com", "/c/jwks.json", ""},
		{"unknown.example.com", "/jwks.json", ""},
		{"example.com:8443", "/jwks.json", ""},
	}
	for _, tt := range tests {
		code, body := get(t, m, tt.host, tt.path)
		switch {
		case tt.want == "" && code != http.StatusNotFound:
			t.Errorf("%s%s: got %d %q, want 404", tt.host, tt.path, code, body)
		case tt.want != "" && (code != http.StatusOK || body != tt.want):
			t.Errorf("%s%s: got %d %q, want issuer %q", tt.host, tt.path, code, body, tt.want)
		}
	}

	// Set replaces everything.
	if err := m.Set([]*Issuer{{Name: "new", URL: "https://new.example.com"}}); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, m, "example.com", "/jwks.json"); code != http.StatusNotFound {
		t.Errorf("a removed issuer is still served: %d", code)
	}
	if _, body := get(t, m, "new.example.com", "/jwks.json"); body != "new" {
		t.Errorf("the new issuer is not served: %q", body)
	}
}

func TestMuxConflicts(t *testing.T) {
	m := NewMux(echo{"/jwks.json"})
	err := m.Set([]*Issuer{
		{Name: "first", URL: "https://example.com/a"},
		{Name: "second", URL: "https://EXAMPLE.com/a/"},
		{Name: "nohost", URL: "https:///a"},
		{Name: "other", URL: "https://example.com/b"},
	})
	if err == nil || !strings.Contains(err.Error(), "FederationDomain /second: the route example.com/a/jwks.json is already served") ||
		!strings.Contains(err.Error(), "has no host") {
		t.Errorf("error %v", err)
	}
	if _, body := get(t, m, "example.com", "/a/jwks.json"); body != "first" {
		t.Errorf("the first issuer lost its route: %q", body)
	}
	if _, body := get(t, m, "example.com", "/b/jwks.json"); body != "other" {
		t.Errorf("other issuers are not served: %q", body)
	}
}

func TestEndpointURLs(t *testing.T) {
	for _, u := range []string{"https://example.com/a", "https://example.com/a/"} {
		iss := &Issuer{URL: u}
		if got := iss.Endpoint("/jwks.json"); got != "https://example.com/a/jwks.json" {
			t.Errorf("%s: endpoint %q", u, got)
		}
		if got := iss.Path("/jwks.json"); got != "/a/jwks.json" {
			t.Errorf("%s: path %q", u, got)
		}
	}
}

// What no issuer serves is answered as Pinniped's Supervisor answers it, by net/http's ServeMux:
// 404 with Go's text, and a redirect to the cleaned path, keeping the query, for a path with
// empty, "." or ".." segments, whether or not an issuer serves the cleaned one.
func TestMuxUnrouted(t *testing.T) {
	m := NewMux(echo{"/jwks.json"})
	if err := m.Set([]*Issuer{{Name: "a", URL: "https://example.com/a"}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		host, target   string
		status         int
		location, body string
	}{
		{"example.com", "/nothing", http.StatusNotFound, "", "404 page not found\n"},
		{"unknown.example.com", "/a/jwks.json", http.StatusNotFound, "", "404 page not found\n"},
		{"example.com", "/a//jwks.json?x=1", http.StatusTemporaryRedirect, "/a/jwks.json?x=1", "<a href=\"/a/jwks.json?x=1\">Temporary Redirect</a>.\n\n"},
		{"example.com", "/b/../a/jwks.json", http.StatusTemporaryRedirect, "/a/jwks.json", "<a href=\"/a/jwks.json\">Temporary Redirect</a>.\n\n"},
		{"unknown.example.com", "/x/./y", http.StatusTemporaryRedirect, "/x/y", "<a href=\"/x/y\">Temporary Redirect</a>.\n\n"},
	} {
		req := httptest.NewRequest(http.MethodGet, "https://"+tt.host+tt.target, nil)
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		if rec.Code != tt.status || rec.Header().Get("Location") != tt.location || rec.Body.String() != tt.body {
			t.Errorf("%s%s: %d to %q, %q; want %d to %q, %q", tt.host, tt.target, rec.Code, rec.Header().Get("Location"), rec.Body.String(), tt.status, tt.location, tt.body)
		}
	}
}
