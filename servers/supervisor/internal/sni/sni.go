// Package sni chooses the Supervisor's serving certificate for each TLS connection by the server
// name the client asked for: the certificate of the FederationDomains with that hostname, else the
// default certificate, else a self-signed bootstrap certificate, so that the listener always
// completes handshakes (health probes work before any certificate is configured).
//
// A connection served the bootstrap certificate is marked, as Pinniped's Supervisor marks it, so
// that the server answers only health probes on it: a client that skipped verification must not
// log in over a connection whose certificate nobody configured.
package sni

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sealion.dev/core/certauthority"
)

// The names in the bootstrap certificate and its issuer, as Pinniped's. Nobody trusts them: the
// certificate only lets a handshake complete.
const (
	BootstrapCommonName   = "pinniped-supervisor-bootstrap-cert"
	bootstrapCACommonName = "pinniped-supervisor-bootstrap-ca"
)

// Certificates holds the serving certificates. It is safe for concurrent use.
type Certificates struct {
	bootstrap *tls.Certificate

	mu     sync.RWMutex
	byHost map[string]*tls.Certificate
	def    *tls.Certificate
}

// New returns Certificates holding only a fresh bootstrap certificate.
func New() (*Certificates, error) {
	ca, err := certauthority.New(bootstrapCACommonName, 10*365*24*time.Hour)
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

// GetCertificate is for tls.Config.GetCertificate. When it falls back to the bootstrap
// certificate it marks the connection, if the connection's context came from ConnContext.
func (c *Certificates) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if cert, ok := c.byHost[strings.ToLower(hello.ServerName)]; ok {
		return cert, nil
	}
	if c.def != nil {
		return c.def, nil
	}
	// A ClientHelloInfo built outside a handshake has no context.
	if ctx := hello.Context(); ctx != nil {
		if bootstrapped, ok := ctx.Value(bootstrappedKey{}).(*atomic.Bool); ok {
			bootstrapped.Store(true)
		}
	}
	return c.bootstrap, nil
}

// bootstrappedKey holds, in a connection's context, whether its handshake was served the
// bootstrap certificate.
type bootstrappedKey struct{}

// ConnContext is for http.Server.ConnContext: it gives each connection the mark that
// GetCertificate sets. The mark stays for the connection's life, whatever certificates are
// configured later, because the client has already accepted the bootstrap one.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, bootstrappedKey{}, new(atomic.Bool))
}

// Bootstrapped reports whether the connection of a request's context was served the bootstrap
// certificate.
func Bootstrapped(ctx context.Context) bool {
	bootstrapped, ok := ctx.Value(bootstrappedKey{}).(*atomic.Bool)
	return ok && bootstrapped.Load()
}
