package ingress

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// readFrom runs readServerName on the server end of a loopback connection whose client runs send,
// and returns once send has.
func readFrom(t *testing.T, send func(net.Conn)) (string, []byte, error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	_ = server.SetDeadline(time.Now().Add(5 * time.Second))
	done := make(chan struct{})
	go func() {
		defer close(done)
		send(client)
	}()
	name, read, err := readServerName(server)
	server.Close()
	<-done
	return name, read, err
}

func TestReadServerName(t *testing.T) {
	var sent bytes.Buffer
	name, read, err := readFrom(t, func(conn net.Conn) {
		// Record what the client sends; it gets no answer, so its handshake ends when the
		// server closes.
		_ = tls.Client(recordingWriter{conn, &sent}, &tls.Config{ServerName: "Proxy.Sealion.Test", InsecureSkipVerify: true}).Handshake()
	})
	if err != nil || !strings.EqualFold(name, "proxy.sealion.test") {
		t.Fatalf("readServerName() = %q, %v; want the client's server name", name, err)
	}
	if len(read) == 0 || read[0] != 0x16 || !bytes.HasPrefix(sent.Bytes(), read) {
		t.Fatalf("read %d bytes starting %x; want a prefix of what the client sent, a handshake record", len(read), read[:min(len(read), 1)])
	}

	name, _, err = readFrom(t, func(conn net.Conn) {
		_ = tls.Client(conn, &tls.Config{InsecureSkipVerify: true}).Handshake()
	})
	if err != nil || name != "" {
		t.Fatalf("without SNI: readServerName() = %q, %v; want no name and no error", name, err)
	}

	_, _, err = readFrom(t, func(conn net.Conn) {
		_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: proxy.sealion.test\r\n\r\n")
	})
	if err == nil || !strings.Contains(err.Error(), "reading a TLS ClientHello") {
		t.Fatalf("plain HTTP: readServerName() error = %v; want one about the ClientHello", err)
	}
}

// recordingWriter copies what is written to the connection.
type recordingWriter struct {
	net.Conn
	sent *bytes.Buffer
}

func (w recordingWriter) Write(p []byte) (int, error) {
	w.sent.Write(p)
	return w.Conn.Write(p)
}
