package impersonationproxy

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sealion.dev/core/certauthority"
)

const (
	caCertKey = "ca.crt"
	caKeyKey  = "ca.key"

	// SignerCommonName and SignerTTL describe the CA whose client certificates only the proxy accepts.
	SignerCommonName = "Pinniped Impersonation Proxy Signer CA"
	SignerTTL        = 365 * 24 * time.Hour
	// signerRenewBefore is how long before expiry the signer is replaced; certificates it issued
	// live minutes, so an hour leaves every one of them time to expire first.
	signerRenewBefore = time.Hour

	servingCACommonName  = "Pinniped Impersonation Proxy Serving CA"
	servingCATTL         = 100 * 365 * 24 * time.Hour
	servingCARenewBefore = 24 * time.Hour
	servingCertTTL       = 365 * 24 * time.Hour
	servingRenewBefore   = 30 * 24 * time.Hour
)

// ensureCA returns the CA stored in Secret name (keys ca.crt, ca.key), creating or replacing it
// when it is missing, invalid, or expires within renewBefore.
func (c *Controller) ensureCA(ctx context.Context, name, commonName string, ttl, renewBefore time.Duration) (*certauthority.CA, error) {
	existing, err := c.secrets.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if existing != nil {
		ca, err := certauthority.Load(existing.Data[caCertKey], existing.Data[caKeyKey])
		if err == nil && c.now().Add(renewBefore).Before(ca.Certificate().NotAfter) {
			return ca, nil
		}
	}
	ca, err := certauthority.New(commonName, ttl)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{caCertKey: ca.Bundle(), caKeyKey: ca.PrivateKeyPEM()}
	if err := c.writeSecret(ctx, existing, name, corev1.SecretTypeOpaque, data); err != nil {
		return nil, err
	}
	logger(ctx).Info("generated a CA", "secret", name, "commonName", commonName, "notAfter", ca.Certificate().NotAfter)
	return ca, nil
}

// ensureServingCert returns the serving certificate and key for host stored in the TLS Secret
// name, issuing a new pair from ca when the stored one is missing, for another host, from another
// CA, or close to expiry.
func (c *Controller) ensureServingCert(ctx context.Context, ca *certauthority.CA, host string) (certPEM, keyPEM []byte, err error) {
	existing, err := c.secrets.Get(c.cfg.ServingCertSecretName)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, nil, err
	}
	if existing != nil && c.servingCertValid(existing.Data[corev1.TLSCertKey], ca, host) {
		return existing.Data[corev1.TLSCertKey], existing.Data[corev1.TLSPrivateKeyKey], nil
	}
	var dnsNames []string
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		dnsNames = []string{host}
	}
	certPEM, keyPEM, err = ca.IssueServingCert(host, dnsNames, ips, servingCertTTL)
	if err != nil {
		return nil, nil, err
	}
	data := map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, caCertKey: ca.Bundle()}
	if err := c.writeSecret(ctx, existing, c.cfg.ServingCertSecretName, corev1.SecretTypeTLS, data); err != nil {
		return nil, nil, err
	}
	logger(ctx).Info("issued the impersonation proxy's serving certificate", "host", host)
	return certPEM, keyPEM, nil
}

func (c *Controller) servingCertValid(certPEM []byte, ca *certauthority.CA, host string) bool {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || cert.VerifyHostname(host) != nil || !c.now().Add(servingRenewBefore).Before(cert.NotAfter) {
		return false
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: c.now()})
	return err == nil
}

// writeSecret creates Secret name, or replaces the data of existing. A conflict with another
// replica doing the same fails this sync; the next one reads the winner's Secret.
func (c *Controller) writeSecret(ctx context.Context, existing *corev1.Secret, name string, typ corev1.SecretType, data map[string][]byte) error {
	client := c.kube.CoreV1().Secrets(c.cfg.Namespace)
	if existing == nil {
		_, err := client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.cfg.Namespace, Labels: c.cfg.Labels},
			Type:       typ,
			Data:       data,
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating Secret %s: %w", name, err)
		}
		return nil
	}
	updated := existing.DeepCopy()
	updated.Data = data
	if updated.Type != typ {
		// The type of a Secret cannot change: replace it.
		if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Secret %s of the wrong type: %w", name, err)
		}
		return c.writeSecret(ctx, nil, name, typ, data)
	}
	if _, err := client.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating Secret %s: %w", name, err)
	}
	return nil
}
