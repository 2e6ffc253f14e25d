package server

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// New constructs without starting: the cluster hears nothing from it, and its listeners accept
// connections the moment it returns (they queue until Run serves them).
func TestNewStartsNothing(t *testing.T) {
	// A unix socket's path must be short; t.TempDir's can be too long.
	dir, err := os.MkdirTemp("", "supervisor")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socket := filepath.Join(dir, "http.sock")
	c, fakes := testConfig(t, minimalFile+`endpoints:
  https: {network: tcp, address: "127.0.0.1:0"}
  http: {network: unix, address: "`+socket+`"}
`)
	s, err := c.Complete().New()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range s.listeners {
		t.Cleanup(func() { _ = l.ln.Close() })
	}
	if n := fakes.actions(); n != 0 {
		t.Errorf("New sent %d requests to the cluster, want none", n)
	}
	// The five controllers, the session garbage collector and the access-token watch.
	if len(s.informers) != 2 || len(s.runners) != 7 || s.api == nil {
		t.Errorf("%d informer factories, %d runners, aggregated API %v; want 2, 7 and one", len(s.informers), len(s.runners), s.api)
	}
	if len(s.listeners) != 2 {
		t.Fatalf("%d listeners, want https and http", len(s.listeners))
	}
	for _, l := range s.listeners {
		conn, err := net.Dial(l.ln.Addr().Network(), l.ln.Addr().String())
		if err != nil {
			t.Errorf("%s listener: %v", l.name, err)
			continue
		}
		_ = conn.Close()
	}
	if https := s.listeners[0].server; https.TLSConfig == nil || https.IdleTimeout != c.IdleTimeout || https.ReadHeaderTimeout != c.ReadHeaderTimeout {
		t.Errorf("the https listener's server is not configured: %+v", https)
	}
}

// New reports a port in use, and closes what it opened before.
func TestNewReportsAPortInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free := freeAddress(t)
	tests := []struct{ name, endpoints, want string }{
		{name: "https", endpoints: `{https: {network: tcp, address: "` + taken.Addr().String() + `"}}`, want: "https listener: "},
		{
			name:      "http",
			endpoints: `{https: {network: tcp, address: "` + free + `"}, http: {network: tcp, address: "` + taken.Addr().String() + `"}}`,
			want:      "http listener: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := testConfig(t, minimalFile+"endpoints: "+tt.endpoints+"\n")
			if _, err := c.Complete().New(); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("New() = %v, want an error starting with %q", err, tt.want)
			}
			ln, err := net.Listen("tcp", free)
			if err != nil {
				t.Fatalf("the https listener stayed open: %v", err)
			}
			_ = ln.Close()
		})
	}
}

// freeAddress is a loopback address whose port nothing listens on.
func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
