package servingcert

import (
	"bytes"
	"sync"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// Provider hands the current serving certificate to an HTTPS server. It implements
// dynamiccertificates.CertKeyContentProvider, so a k8s.io/apiserver generic server given it as
// SecureServingInfo.Cert switches to a rotated certificate without a restart.
type Provider struct {
	name  string
	ready chan struct{}

	mu        sync.RWMutex
	certPEM   []byte
	keyPEM    []byte
	listeners []dynamiccertificates.Listener
}

var _ dynamiccertificates.CertKeyContentProvider = (*Provider)(nil)

func newProvider(name string) *Provider {
	return &Provider{name: name, ready: make(chan struct{})}
}

// Name identifies the provider in the generic server's logs.
func (p *Provider) Name() string { return p.name }

// CurrentCertKeyContent returns the PEM certificate chain and private key, or nils before Ready.
func (p *Provider) CurrentCertKeyContent() ([]byte, []byte) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.certPEM, p.keyPEM
}

// AddListener registers l to be told when the certificate changes.
func (p *Provider) AddListener(l dynamiccertificates.Listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.listeners = append(p.listeners, l)
}

// Ready is closed once a certificate is available. The generic server refuses to start with an
// empty serving certificate, so start it only after Ready.
func (p *Provider) Ready() <-chan struct{} { return p.ready }

// set stores a new certificate and key and tells the listeners, unless nothing changed.
func (p *Provider) set(certPEM, keyPEM []byte) {
	p.mu.Lock()
	if bytes.Equal(certPEM, p.certPEM) && bytes.Equal(keyPEM, p.keyPEM) {
		p.mu.Unlock()
		return
	}
	first := p.certPEM == nil
	p.certPEM, p.keyPEM = certPEM, keyPEM
	listeners := append([]dynamiccertificates.Listener(nil), p.listeners...)
	p.mu.Unlock()

	if first {
		close(p.ready)
	}
	for _, l := range listeners {
		l.Enqueue()
	}
}
