package steps

import (
	"net"
	"strings"
	"testing"
)

// A run has one tunnel proxy, whoever asks for it, and deleting the cluster closes it.
func TestClusterTunnelIsOnePerRun(t *testing.T) {
	c := &Cluster{}
	first, err := c.Tunnel()
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Tunnel()
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Errorf("two proxies for one run: %s and %s", first.URL(), second.URL())
	}
	c.closeTunnel()
	if conn, err := net.Dial("tcp", strings.TrimPrefix(first.URL(), "http://")); err == nil {
		conn.Close()
		t.Errorf("the proxy at %s still listens after the cluster's end", first.URL())
	}
}
