package impersonationproxy

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
)

// errExternalTLS prefixes every problem with the Secret that spec.impersonationProxy.tls names.
const errExternalTLS = "could not load the externally provided TLS secret for the impersonation proxy"

// useExternalServingCert serves the certificate of the Secret that spec names (tls.crt, tls.key)
// and returns the CA bundle to advertise: certificateAuthorityData, else the Secret's ca.crt, else
// none. The Concierge's own serving certificate is deleted, since nothing serves it any more; its
// CA stays for a later return to generated certificates. Whoever manages the Secret may replace
// it at any time: every change to a Secret of the namespace triggers a sync, which loads it anew.
func (c *Controller) useExternalServingCert(ctx context.Context, spec configv1alpha1.ImpersonationProxyTLSSpec) ([]byte, error) {
	if err := c.deleteGeneratedServingCert(ctx); err != nil {
		return nil, err
	}
	secret, err := c.secrets.Get(spec.SecretName)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", errExternalTLS, err)
	}
	changed, err := c.cert.set(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("%s: Secret %s: %w", errExternalTLS, spec.SecretName, err)
	}
	if changed {
		logger(ctx).Info("serving the externally provided certificate", "secret", spec.SecretName)
	}
	caPEM := secret.Data[caCertKey]
	if len(caPEM) > 0 && !holdsCertificate(caPEM) {
		return nil, fmt.Errorf("%s: Secret %s: its %s holds no PEM certificate", errExternalTLS, spec.SecretName, caCertKey)
	}
	if spec.CertificateAuthorityData == "" {
		return caPEM, nil
	}
	caPEM, err = base64.StdEncoding.DecodeString(spec.CertificateAuthorityData)
	if err != nil {
		return nil, fmt.Errorf("spec.impersonationProxy.tls.certificateAuthorityData is not base64: %w", err)
	}
	if !holdsCertificate(caPEM) {
		return nil, errors.New("spec.impersonationProxy.tls.certificateAuthorityData holds no PEM certificate")
	}
	return caPEM, nil
}

// holdsCertificate reports whether pemData contains at least one parseable certificate.
func holdsCertificate(pemData []byte) bool {
	return x509.NewCertPool().AppendCertsFromPEM(pemData)
}

// deleteGeneratedServingCert deletes the Secret of the generated serving certificate if it exists.
func (c *Controller) deleteGeneratedServingCert(ctx context.Context) error {
	name := c.cfg.ServingCertSecretName
	if _, err := c.secrets.Get(name); apierrors.IsNotFound(err) {
		return nil
	}
	err := c.kube.CoreV1().Secrets(c.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Secret %s: %w", name, err)
	}
	logger(ctx).Info("deleted the impersonation proxy's generated serving certificate", "secret", name)
	return nil
}
