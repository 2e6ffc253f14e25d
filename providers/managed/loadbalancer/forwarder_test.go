package loadbalancer

import (
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

func startTestForwarder(t *testing.T, backends ...string) *forwarder {
	t.Helper()
	f, err := startForwarder(klog.Background(), "127.0.0.1:0", backends, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.close)
	return f
}

// deadAddr is an address nothing listens on.
func deadAddr(t *testing.T) string {
	return "127.0.0.1:" + strconv.Itoa(int(freePort(t)))
}

func TestForwarderRoundRobin(t *testing.T) {
	a := startEchoServer(t, "127.0.0.1", "a")
	b := startEchoServer(t, "127.0.0.1", "b")
	tests := []struct {
		name     string
		backends []string
		want     []string // servers answering successive connections
	}{
		{name: "alternates", backends: []string{a.addr, b.addr}, want: []string{"a", "b", "a", "b"}},
		{name: "skips an endpoint that refuses", backends: []string{a.addr, deadAddr(t), b.addr}, want: []string{"a", "b", "b", "a"}},
		{name: "single endpoint", backends: []string{b.addr}, want: []string{"b", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startTestForwarder(t, tt.backends...)
			for i, want := range tt.want {
				c, err := dialEcho(f.server.Addr().String())
				if err != nil {
					t.Fatalf("connection %d: %v", i, err)
				}
				if err := c.roundTrip("hello"); err != nil {
					t.Fatalf("connection %d: %v", i, err)
				}
				c.conn.Close()
				if c.server != want {
					t.Fatalf("connection %d answered by %q; want %q", i, c.server, want)
				}
			}
		})
	}
}

func TestForwarderWithoutEndpointsClosesConnections(t *testing.T) {
	for _, backends := range [][]string{nil, {deadAddr(t)}} {
		f := startTestForwarder(t, backends...)
		conn, err := net.Dial("tcp", f.server.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := conn.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("backends %v: read = %d, %v; want EOF", backends, n, err)
		}
		conn.Close()
	}
}

func TestForwarderKeepsConnectionsAcrossEndpointChanges(t *testing.T) {
	a := startEchoServer(t, "127.0.0.1", "a")
	b := startEchoServer(t, "127.0.0.1", "b")
	f := startTestForwarder(t, a.addr)

	long, err := dialEcho(f.server.Addr().String())
	if err != nil || long.server != "a" {
		t.Fatalf("first connection: server %v, %v", long, err)
	}
	defer long.conn.Close()
	f.setBackends([]string{b.addr})

	fresh, err := dialEcho(f.server.Addr().String())
	if err != nil || fresh.server != "b" {
		t.Fatalf("connection after the change: %+v, %v; want one answered by b", fresh, err)
	}
	fresh.conn.Close()
	if err := long.roundTrip("still there"); err != nil {
		t.Fatalf("the connection opened before the change broke: %v", err)
	}
}

func TestForwarderHalfClose(t *testing.T) {
	a := startEchoServer(t, "127.0.0.1", "a")
	f := startTestForwarder(t, a.addr)
	conn, err := net.Dial("tcp", f.server.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "last words\n"); err != nil {
		t.Fatal(err)
	}
	// The client is done sending; the answer must still arrive, then the end of the stream.
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil || string(got) != "a\nlast words\n" {
		t.Fatalf("read %q, %v; want the greeting and the echo, then EOF", got, err)
	}
}

func TestForwarderCloseEndsConnections(t *testing.T) {
	a := startEchoServer(t, "127.0.0.1", "a")
	f, err := startForwarder(klog.Background(), "127.0.0.1:0", []string{a.addr}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dialEcho(f.server.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.conn.Close()
	f.close()
	if _, err := c.reader.ReadByte(); err == nil {
		t.Fatal("the relayed connection is still open after close")
	}
	if conn, err := net.Dial("tcp", f.server.Addr().String()); err == nil {
		conn.Close()
		t.Fatal("the forwarder still accepts connections after close")
	}
}
