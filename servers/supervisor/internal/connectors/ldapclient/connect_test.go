package ldapclient

import (
	"context"
	"testing"
	"time"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/connectorstest"
)

// A server that accepts connections and never answers (neither the LDAPS handshake nor the
// StartTLS request, both tried on the port given) is given up on after the connect timeout for
// each protocol, as unreachable, not after the call's 90 seconds.
func TestConnectTimeout(t *testing.T) {
	p, err := New(Config{
		Host:           connectorstest.SilentUpstream(t),
		ConnectTimeout: 200 * time.Millisecond,
		BindUsername:   "cn=admin,dc=example,dc=test",
		BindPassword:   "password",
		UserSearch:     UserSearch{Base: "dc=example,dc=test", UsernameAttribute: "uid", UIDAttribute: "uidNumber"},
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.Probe(context.Background())
	if err == nil {
		t.Fatal("a silent server was probed successfully")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("gave up after %v, want about twice the 200ms connect timeout", took)
	}
	if !connectors.Unreachable(err) {
		t.Errorf("the timeouts %v are not reported as unreachable", err)
	}
}
