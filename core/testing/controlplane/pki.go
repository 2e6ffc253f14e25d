package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// keyPair is a certificate with its private key, kept in memory and written to PEM files.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// certSpec says what a leaf certificate is for.
type certSpec struct {
	commonName   string
	organization []string
	dnsNames     []string
	ips          []net.IP
	usages       []x509.ExtKeyUsage
}

// lifetime is long enough for any test run and short enough that a leaked file is useless.
const lifetime = 24 * time.Hour

func newCA(commonName string) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key for CA %q: %w", commonName, err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return sign(tmpl, key, nil)
}

// issue creates a leaf certificate signed by ca.
func (ca *keyPair) issue(spec certSpec) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key for %q: %w", spec.commonName, err)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: spec.commonName, Organization: spec.organization},
		DNSNames:    spec.dnsNames,
		IPAddresses: spec.ips,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: spec.usages,
	}
	return sign(tmpl, key, ca)
}

// sign fills in serial and validity, then signs tmpl with parent (self-signed when parent is nil).
func sign(tmpl *x509.Certificate, key crypto.Signer, parent *keyPair) (*keyPair, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	now := time.Now()
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-time.Minute) // tolerate small clock differences
	tmpl.NotAfter = now.Add(lifetime)

	parentCert, parentKey := tmpl, key
	if parent != nil {
		parentCert, parentKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, key.Public(), parentKey)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding key of %q: %w", tmpl.Subject.CommonName, err)
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// write stores the pair as <name>.crt and <name>.key in dir and returns both paths.
func (kp *keyPair) write(dir, name string) (certFile, keyFile string, err error) {
	certFile = filepath.Join(dir, name+".crt")
	keyFile = filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, kp.certPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", certFile, err)
	}
	if err := os.WriteFile(keyFile, kp.keyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", keyFile, err)
	}
	return certFile, keyFile, nil
}

// pki is every credential the control plane needs, as files under one directory.
type pki struct {
	caCertFile, caKeyFile                   string
	servingCertFile, servingKeyFile         string
	frontProxyCACertFile                    string
	proxyClientCertFile, proxyClientKeyFile string
	saPublicKeyFile, saPrivateKeyFile       string

	caPEM                     []byte
	adminCertPEM, adminKeyPEM []byte
}

// proxyClientName is the CN the aggregator presents to aggregated API servers; it must be
// listed in --requestheader-allowed-names.
const proxyClientName = "front-proxy-client"

func generatePKI(dir string) (*pki, error) {
	p := &pki{}
	ca, err := newCA("sealion-test-cluster-ca")
	if err != nil {
		return nil, err
	}
	if p.caCertFile, p.caKeyFile, err = ca.write(dir, "ca"); err != nil {
		return nil, err
	}
	p.caPEM = ca.certPEM

	serving, err := ca.issue(certSpec{
		commonName: "kube-apiserver",
		dnsNames:   []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		ips:        []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP(serviceIP)},
		usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	if p.servingCertFile, p.servingKeyFile, err = serving.write(dir, "apiserver"); err != nil {
		return nil, err
	}

	admin, err := ca.issue(certSpec{
		commonName:   "sealion-test-admin",
		organization: []string{"system:masters"},
		usages:       []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	p.adminCertPEM, p.adminKeyPEM = admin.certPEM, admin.keyPEM

	frontProxyCA, err := newCA("sealion-test-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	if p.frontProxyCACertFile, _, err = frontProxyCA.write(dir, "front-proxy-ca"); err != nil {
		return nil, err
	}
	proxyClient, err := frontProxyCA.issue(certSpec{
		commonName: proxyClientName,
		usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	if p.proxyClientCertFile, p.proxyClientKeyFile, err = proxyClient.write(dir, "front-proxy-client"); err != nil {
		return nil, err
	}

	if p.saPublicKeyFile, p.saPrivateKeyFile, err = writeServiceAccountKeys(dir); err != nil {
		return nil, err
	}
	return p, nil
}

// writeServiceAccountKeys writes an RSA key pair for signing service account tokens; RSA because
// the token issuer's default algorithm is RS256.
func writeServiceAccountKeys(dir string) (publicFile, privateFile string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", fmt.Errorf("generating service account key: %w", err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", fmt.Errorf("encoding service account private key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", fmt.Errorf("encoding service account public key: %w", err)
	}
	publicFile = filepath.Join(dir, "sa.pub")
	privateFile = filepath.Join(dir, "sa.key")
	if err := os.WriteFile(publicFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", publicFile, err)
	}
	if err := os.WriteFile(privateFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}), 0o600); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", privateFile, err)
	}
	return publicFile, privateFile, nil
}
