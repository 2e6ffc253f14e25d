package oidclogin

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"

	"sealion.dev/core/tracing"
)

// NewHTTPClient returns a client for talking to an issuer: it trusts only the CA certificates of
// caBundle (PEM), or the system's when caBundle is empty, and times out after HTTPTimeout. Within
// a traced command its requests are spans, and carry the trace on to the issuer.
func NewHTTPClient(caBundle []byte) (*http.Client, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("the issuer's CA bundle holds no PEM certificate")
		}
		transport.TLSClientConfig.RootCAs = pool
	}
	return &http.Client{Transport: tracing.Transport(transport), Timeout: HTTPTimeout}, nil
}
