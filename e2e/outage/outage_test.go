package outage

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// echoServer answers each line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, line string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

func TestCutAndRestore(t *testing.T) {
	t.Parallel()
	f, err := Start("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })

	open, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if got, err := roundTrip(open, "up"); err != nil || got != "up\n" {
		t.Fatalf("through the forwarder: %q, %v", got, err)
	}

	f.Cut()
	if _, err := roundTrip(open, "after the cut"); err == nil {
		t.Error("a connection open before the cut still works")
	}
	if _, err := net.Dial("tcp", f.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial during the outage: %v, want connection refused", err)
	}

	if err := f.Restore(); err != nil {
		t.Fatal(err)
	}
	again, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatalf("dial after Restore: %v", err)
	}
	defer again.Close()
	if got, err := roundTrip(again, "back"); err != nil || got != "back\n" {
		t.Errorf("after Restore: %q, %v", got, err)
	}
}
