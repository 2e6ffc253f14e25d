package impersonationproxy

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"

	"sealion.dev/core/certauthority"
	"sealion.dev/servers/internal/tlsprofile"
)

// The proxy's server cuts off slow and idle clients but never a stream.
func TestListenerServerLimits(t *testing.T) {
	l := &listener{address: "127.0.0.1:0", handler: http.NotFoundHandler(), cert: &servingCert{}, listen: net.Listen}
	ctx := context.Background()
	if err := l.start(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.stop(ctx)
	s := l.server
	if s.ReadHeaderTimeout != 30*time.Second || s.IdleTimeout != 90*time.Second || s.MaxHeaderBytes != 1<<20 {
		t.Errorf("read header timeout %v, idle timeout %v, max header bytes %d; want 30s, 90s and 1 MiB",
			s.ReadHeaderTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
	if s.ReadTimeout != 0 || s.WriteTimeout != 0 {
		t.Errorf("read timeout %v, write timeout %v: watches, exec and logs -f would be cut", s.ReadTimeout, s.WriteTimeout)
	}
}

// tls.onedottwo.allowedCiphers narrows what the proxy accepts in TLS 1.2, and HTTP/2 is left
// out when none of the ciphers it requires remains.
func TestListenerCiphers(t *testing.T) {
	ca, err := certauthority.New("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueServingCert("proxy", nil, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	profile, err := tlsprofile.New([]string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"})
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{address: "127.0.0.1:0", handler: http.NotFoundHandler(), cert: &servingCert{}, tls: profile, listen: net.Listen}
	if _, err := l.cert.set(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	var addr string
	l.listen = func(network, address string) (net.Listener, error) {
		ln, err := net.Listen(network, address)
		if err == nil {
			addr = ln.Addr().String()
		}
		return ln, err
	}
	ctx := context.Background()
	if err := l.start(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.stop(ctx)
	handshake := func(cipher uint16) (string, error) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{
			InsecureSkipVerify: true, //nolint:gosec // only the cipher is under test
			MaxVersion:         tls.VersionTLS12,
			CipherSuites:       []uint16{cipher},
			NextProtos:         []string{"h2", "http/1.1"},
		})
		if err != nil {
			return "", err
		}
		defer func() { _ = conn.Close() }()
		return conn.ConnectionState().NegotiatedProtocol, nil
	}
	if _, err := handshake(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256); err == nil {
		t.Error("a cipher left out of the allowed list was accepted")
	}
	proto, err := handshake(tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384)
	if err != nil {
		t.Fatalf("the allowed cipher was refused: %v", err)
	}
	if proto != "http/1.1" {
		t.Errorf("negotiated %q, want http/1.1: HTTP/2 needs an AES-128-GCM cipher", proto)
	}
}
