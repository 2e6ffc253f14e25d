// Package sni chooses the Supervisor's serving certificate for each TLS connection by the server
// name the client asked for: the certificate of the FederationDomains with that hostname, else the
// default certificate, else a self-signed bootstrap certificate, so that the listener always
// completes handshakes (health probes work before any certificate is configured).
package sni

import (
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"time"

	"sealion.dev/core/certauthority"
)

// BootstrapCommonName is the subject of the bootstrap certificate.
const BootstrapCommonName = "pinniped-supervisor-bootstrap"

// Certificates holds the serving certificates. It is safe for concurrent use.
type Certificates struct {
	bootstrap *tls.Certificate

	mu     sync.RWMutex
	byHost map[string]*tls.Certificate
	def    *tls.Certificate
}

// New returns Certificates holding only a fresh bootstrap certificate.
func New() (*Certificates, error) {
	ca, err := certauthority.New(BootstrapCommonName, 10*365*24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("creating the bootstrap certificate: %w", err)
	}
	certPEM, keyPEM, err := ca.IssueServingCert(BootstrapCommonName, []string{BootstrapCommonName}, nil, 10*365*24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("creating the bootstrap certificate: %w", err)
	}
	bootstrap, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the bootstrap certificate: %w", err)
	}
	return &Certificates{bootstrap: &bootstrap}, nil
}

// Set replaces the certificates: byHost maps lower-case hostnames to their certificate, and def,
// which may be nil, serves every other name.
func (c *Certificates) Set(byHost map[string]*tls.Certificate, def *tls.Certificate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byHost, c.def = byHost, def
}

// GetCertificate is for tls.Config.GetCertificate.
func (c *Certificates) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if cert, ok := c.byHost[strings.ToLower(hello.ServerName)]; ok {
		return cert, nil
	}
	if c.def != nil {
		return c.def, nil
	}
	return c.bootstrap, nil
}
