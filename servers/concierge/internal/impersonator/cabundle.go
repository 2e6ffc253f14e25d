package impersonator

import (
	"bytes"
	"crypto/x509"
	"sync"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// CABundleSource is anything holding a CA certificate that may change, such as a dynamicca.Signer.
type CABundleSource interface {
	// CABundle returns the current CA certificate(s) as PEM, or nil when there is none.
	CABundle() []byte
}

// CAContent adapts a CABundleSource to the apiserver's CAContentProvider, so that client
// certificates signed by the proxy's own signer authenticate as soon as the signer is loaded.
// The certificate pool is rebuilt only when the bundle changes.
func CAContent(name string, src CABundleSource) dynamiccertificates.CAContentProvider {
	return &caContent{name: name, src: src}
}

type caContent struct {
	name string
	src  CABundleSource

	mu     sync.Mutex
	bundle []byte
	pool   *x509.CertPool
}

func (c *caContent) Name() string                   { return c.name }
func (c *caContent) CurrentCABundleContent() []byte { return c.src.CABundle() }

// AddListener is a no-op: the x509 authenticator asks for VerifyOptions on every request.
func (c *caContent) AddListener(dynamiccertificates.Listener) {}

func (c *caContent) VerifyOptions() (x509.VerifyOptions, bool) {
	bundle := c.src.CABundle()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !bytes.Equal(bundle, c.bundle) {
		c.bundle, c.pool = bundle, nil
		if pool := x509.NewCertPool(); len(bundle) > 0 && pool.AppendCertsFromPEM(bundle) {
			c.pool = pool
		}
	}
	if c.pool == nil {
		return x509.VerifyOptions{}, false
	}
	return x509.VerifyOptions{Roots: c.pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
}
