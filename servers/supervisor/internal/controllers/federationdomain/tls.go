package federationdomain

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// certificates loads the serving certificates: one per issuer hostname whose FederationDomains
// agree on a TLS Secret (IP addresses have none: clients send no server name for them), and the
// default one. A missing or unreadable Secret is logged and skipped, so other hostnames are served.
func (c *Controller) certificates(ctx context.Context, results []*result) (map[string]*tls.Certificate, *tls.Certificate) {
	log := klog.FromContext(ctx)
	byHost := map[string]*tls.Certificate{}
	for _, r := range results {
		name := tlsSecretName(r.fd)
		if r.issuerURL == nil || !r.tlsAgreed || name == "" {
			continue
		}
		host := strings.ToLower(r.issuerURL.Hostname())
		if net.ParseIP(host) != nil {
			continue
		}
		if _, done := byHost[host]; done {
			continue
		}
		cert, err := c.loadCertificate(name)
		if err != nil {
			log.Error(err, "cannot serve the TLS certificate of a FederationDomain", "federationDomain", r.fd.Name, "hostname", host)
			continue
		}
		byHost[host] = cert
	}
	def, err := c.loadCertificate(c.cfg.DefaultTLSCertificateSecret)
	if err != nil && !apierrors.IsNotFound(err) {
		log.Error(err, "cannot serve the default TLS certificate")
	}
	return byHost, def
}

// loadCertificate reads the tls.crt and tls.key of a Secret.
func (c *Controller) loadCertificate(name string) (*tls.Certificate, error) {
	secret, err := c.secrets.Get(name)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("the Secret %s does not hold a usable %s and %s: %w", name, corev1.TLSCertKey, corev1.TLSPrivateKeyKey, err)
	}
	return &cert, nil
}
