// Package connectorstest has what the connectors' tests share.
package connectorstest

import (
	"errors"
	"net"
	"sync"
	"testing"
)

// SilentUpstream listens on loopback, accepts connections and never sends a byte, as an upstream
// whose replies a firewall drops looks from a client that has connected: a TLS handshake or an
// LDAP request waits for an answer that never comes. It returns host:port; the listener and its
// connections close when the test ends.
func SilentUpstream(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}
