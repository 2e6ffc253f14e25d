// Package certauthority is an in-memory X.509 certificate authority: it creates or loads a CA
// and issues short-lived client and serving certificates signed by it.
//
// Issued certificates always get a fresh ECDSA P-256 key: generating one costs microseconds,
// where an RSA key costs tens of milliseconds, and the Concierge issues one certificate per
// TokenCredentialRequest.
package certauthority

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// ClockSkew is how far back NotBefore of every issued certificate is set, so that a certificate
// is usable at once by servers whose clock runs somewhat behind ours.
const ClockSkew = 5 * time.Minute

// CA is a certificate authority: a CA certificate and its private key. It is safe for
// concurrent use; it never changes after construction.
type CA struct {
	cert    *x509.Certificate
	signer  crypto.Signer
	certPEM []byte
	keyPEM  []byte
	now     func() time.Time
}

// Option changes how a CA is built.
type Option func(*CA)

// WithClock makes the CA read the current time from now instead of time.Now; for tests.
func WithClock(now func() time.Time) Option {
	return func(c *CA) { c.now = now }
}

// New makes a self-signed CA with a new ECDSA P-256 key, valid from ClockSkew ago until ttl
// from now.
func New(commonName string, ttl time.Duration, opts ...Option) (*CA, error) {
	ca := newCA(opts)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := ca.now()
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-ClockSkew),
		NotAfter:              now.Add(ttl),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// CreateCertificate derives SubjectKeyId from the public key when IsCA is set.
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA certificate %q: %w", commonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode CA key: %w", err)
	}
	ca.cert, err = x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse new CA certificate: %w", err)
	}
	ca.signer = key
	ca.certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	ca.keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return ca, nil
}

// Load makes a CA from a PEM certificate and a PEM private key. The first CERTIFICATE block of
// certPEM is the CA certificate; the first private key block of keyPEM (PKCS#1 RSA, PKCS#8, or
// SEC1 EC) is its key. Load fails unless the certificate is a CA allowed to sign certificates
// and the key belongs to it.
func Load(certPEM, keyPEM []byte, opts ...Option) (*CA, error) {
	ca := newCA(opts)
	certBlock := firstBlock(certPEM, func(t string) bool { return t == "CERTIFICATE" })
	if certBlock == nil {
		return nil, errors.New("load CA: no CERTIFICATE PEM block found")
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("load CA: parse certificate: %w", err)
	}
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return nil, fmt.Errorf("load CA: certificate %q is not a CA (basic constraints CA:TRUE missing)", cert.Subject)
	}
	if cert.KeyUsage != 0 && cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("load CA: certificate %q lacks the certSign key usage", cert.Subject)
	}

	// openssl may put an "EC PARAMETERS" block before the key, so look for the key by type.
	keyBlock := firstBlock(keyPEM, func(t string) bool { return strings.HasSuffix(t, "PRIVATE KEY") })
	if keyBlock == nil {
		return nil, errors.New("load CA: no PRIVATE KEY PEM block found")
	}
	signer, err := parsePrivateKey(keyBlock)
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("load CA: private key does not match the public key of certificate %q", cert.Subject)
	}

	ca.cert = cert
	ca.signer = signer
	ca.certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certBlock.Bytes})
	ca.keyPEM = pem.EncodeToMemory(&pem.Block{Type: keyBlock.Type, Bytes: keyBlock.Bytes})
	return ca, nil
}

func newCA(opts []Option) *CA {
	ca := &CA{now: time.Now}
	for _, o := range opts {
		o(ca)
	}
	return ca
}

func firstBlock(data []byte, match func(blockType string) bool) *pem.Block {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil
		}
		if match(block.Type) {
			return block
		}
	}
}

func parsePrivateKey(block *pem.Block) (crypto.Signer, error) {
	var (
		key any
		err error
	)
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("unsupported private key PEM type %q", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", block.Type, err)
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		return k, nil
	default:
		return nil, fmt.Errorf("unsupported private key type %T (want RSA or ECDSA)", key)
	}
}

// Bundle returns the CA certificate as PEM, for clients and servers that must trust it.
func (c *CA) Bundle() []byte { return bytes.Clone(c.certPEM) }

// PrivateKeyPEM returns the CA private key as PEM (PKCS#8 for a CA made by New, otherwise the
// encoding it was loaded from).
func (c *CA) PrivateKeyPEM() []byte { return bytes.Clone(c.keyPEM) }

// Certificate returns the parsed CA certificate. Callers must not modify it.
func (c *CA) Certificate() *x509.Certificate { return c.cert }

// IssueClientCert issues a client certificate for username with groups as organizations and
// organizationalUnits as OUs (the Concierge carries user extras there),
// valid from ClockSkew ago until ttl from now, with a new ECDSA P-256 key. notAfter is the
// certificate's, as it is encoded (to the second): a TokenCredentialRequest reports it, and
// parsing the certificate again for it cost an exchange 50 allocations.
func (c *CA) IssueClientCert(username string, groups, organizationalUnits []string, ttl time.Duration) (certPEM, keyPEM []byte, notAfter time.Time, err error) {
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: username, Organization: groups, OrganizationalUnit: organizationalUnits},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	certPEM, keyPEM, err = c.issue(template, ttl)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	// x509 encodes validity to the second, in UTC.
	return certPEM, keyPEM, template.NotAfter.UTC().Truncate(time.Second), nil
}

// IssueServingCert issues a TLS server certificate for dnsNames and ips, valid from ClockSkew
// ago until ttl from now, with a new ECDSA P-256 key.
func (c *CA) IssueServingCert(commonName string, dnsNames []string, ips []net.IP, ttl time.Duration) (certPEM, keyPEM []byte, err error) {
	if len(dnsNames) == 0 && len(ips) == 0 {
		return nil, nil, errors.New("issue serving certificate: need at least one DNS name or IP address")
	}
	return c.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		DNSNames:    dnsNames,
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ttl)
}

func (c *CA) issue(template *x509.Certificate, ttl time.Duration) ([]byte, []byte, error) {
	if ttl <= 0 {
		return nil, nil, fmt.Errorf("issue certificate for %q: ttl must be positive, got %s", template.Subject.CommonName, ttl)
	}
	now := c.now()
	if now.After(c.cert.NotAfter) {
		// Everything it signed would be rejected; say why here rather than at the API server.
		return nil, nil, fmt.Errorf("issue certificate for %q: CA %q expired at %s",
			template.Subject.CommonName, c.cert.Subject, c.cert.NotAfter.UTC().Format(time.RFC3339))
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key for %q: %w", template.Subject.CommonName, err)
	}
	template.SerialNumber, err = randomSerial()
	if err != nil {
		return nil, nil, err
	}
	template.NotBefore = now.Add(-ClockSkew)
	template.NotAfter = now.Add(ttl)
	// ECDSA keys only sign; key encipherment would be meaningless for them.
	template.KeyUsage = x509.KeyUsageDigitalSignature
	template.BasicConstraintsValid = true
	// CreateCertificate copies the CA's SubjectKeyId into AuthorityKeyId.
	der, err := x509.CreateCertificate(rand.Reader, template, c.cert, key.Public(), c.signer)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate for %q: %w", template.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key for %q: %w", template.Subject.CommonName, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		nil
}

// randomSerial returns a random positive 128-bit serial number.
func randomSerial() (*big.Int, error) {
	// Draw from [0, 2^128-1) and add one: zero is not a valid serial number.
	limit := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))
	serial, err := rand.Int(rand.Reader, limit)
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil
}
