package sni

import (
	"crypto/tls"
	"crypto/x509"
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
