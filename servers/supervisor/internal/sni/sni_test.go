package sni

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"sealion.dev/core/certauthority"
)

func cert(t *testing.T, host string) *tls.Certificate {
	t.Helper()
	ca, err := certauthority.New("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, k, err := ca.IssueServingCert(host, []string{host}, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return &pair
}

func subject(t *testing.T, c *tls.Certificate) string {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.Subject.CommonName
}

func TestGetCertificate(t *testing.T) {
	certs, err := New()
	if err != nil {
		t.Fatal(err)
	}
	get := func(serverName string) string {
		c, err := certs.GetCertificate(&tls.ClientHelloInfo{ServerName: serverName})
		if err != nil {
			t.Fatal(err)
		}
		return subject(t, c)
	}
	// Nothing configured: the bootstrap certificate, whatever the name.
	if got := get("a.example.com"); got != BootstrapCommonName {
		t.Errorf("before any certificate: %q", got)
	}
	if got := get(""); got != BootstrapCommonName {
		t.Errorf("no server name, before any certificate: %q", got)
	}

	certs.Set(map[string]*tls.Certificate{"a.example.com": cert(t, "a.example.com")}, nil)
	if got := get("A.Example.com"); got != "a.example.com" {
		t.Errorf("matching name in another case: %q", got)
	}
	if got := get("b.example.com"); got != BootstrapCommonName {
		t.Errorf("unknown name without a default: %q", got)
	}

	certs.Set(map[string]*tls.Certificate{"a.example.com": cert(t, "a.example.com")}, cert(t, "default"))
	for name, want := range map[string]string{"a.example.com": "a.example.com", "b.example.com": "default", "": "default", "10.0.0.1": "default"} {
		if got := get(name); got != want {
			t.Errorf("%q: got %q, want %q", name, got, want)
		}
	}
}

// bootstrapped reports whether a handshake for serverName marks its connection.
func bootstrapped(t *testing.T, certs *Certificates, serverName string) bool {
	t.Helper()
	serverConn, clientConn := net.Pipe()
	defer func() { _ = serverConn.Close(); _ = clientConn.Close() }()
	ctx := ConnContext(context.Background(), serverConn)
	done := make(chan error, 1)
	go func() {
		done <- tls.Server(serverConn, &tls.Config{GetCertificate: certs.GetCertificate}).HandshakeContext(ctx)
	}()
	//nolint:gosec // only the server's choice is under test
	if err := tls.Client(clientConn, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}).Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return Bootstrapped(ctx)
}

// Only a connection served the bootstrap certificate is marked.
func TestBootstrappedConnections(t *testing.T) {
	certs, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if !bootstrapped(t, certs, "a.example.com") {
		t.Error("a connection served the bootstrap certificate is not marked")
	}
	certs.Set(map[string]*tls.Certificate{"a.example.com": cert(t, "a.example.com")}, nil)
	if bootstrapped(t, certs, "a.example.com") {
		t.Error("a connection served its hostname's certificate is marked")
	}
	if !bootstrapped(t, certs, "b.example.com") {
		t.Error("a connection for a name without a certificate, and no default, is not marked")
	}
	certs.Set(nil, cert(t, "default"))
	if bootstrapped(t, certs, "b.example.com") {
		t.Error("a connection served the default certificate is marked")
	}
	if Bootstrapped(context.Background()) {
		t.Error("a context without the connection's mark counts as bootstrapped")
	}
}
