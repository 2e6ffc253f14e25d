package certauthority

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var fixedNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return fixedNow }

// rsaKey is generated once: 2048-bit RSA key generation is slow.
var rsaKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// selfSigned makes a self-signed certificate for key.
func selfSigned(t *testing.T, key crypto.Signer, isCA bool, usage x509.KeyUsage) []byte {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(42),
		Subject:               pkix.Name{CommonName: "test"},
		NotBefore:             fixedNow.Add(-time.Hour),
		NotAfter:              fixedNow.Add(time.Hour),
		BasicConstraintsValid: true,
		IsCA:                  isCA,
		KeyUsage:              usage,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemOf(t *testing.T, blockType string, der []byte, err error) []byte {
	t.Helper()
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
}

func TestLoad(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	otherECKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)

	ecCert := selfSigned(t, ecKey, true, x509.KeyUsageCertSign)
	rsaCert := selfSigned(t, rsaKey(), true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature)
	sec1, err := x509.MarshalECPrivateKey(ecKey)
	require.NoError(t, err)
	ecParams := []byte("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n")

	tests := []struct {
		name    string
		certPEM []byte
		keyPEM  []byte
		wantErr string
	}{
		{name: "RSA PKCS#1", certPEM: rsaCert, keyPEM: pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey()), nil)},
		{name: "RSA PKCS#8", certPEM: rsaCert, keyPEM: pkcs8(t, rsaKey())},
		{name: "EC SEC1", certPEM: ecCert, keyPEM: pemOf(t, "EC PRIVATE KEY", sec1, nil)},
		{name: "EC SEC1 after EC PARAMETERS", certPEM: ecCert, keyPEM: append(ecParams, pemOf(t, "EC PRIVATE KEY", sec1, nil)...)},
		{name: "EC PKCS#8", certPEM: ecCert, keyPEM: pkcs8(t, ecKey)},
		{name: "CA without key usage", certPEM: selfSigned(t, ecKey, true, 0), keyPEM: pemOf(t, "EC PRIVATE KEY", sec1, nil)},
		{
			name:    "key of another CA",
			certPEM: ecCert, keyPEM: pkcs8(t, otherECKey),
			wantErr: "private key does not match",
		},
		{
			name:    "RSA key for EC certificate",
			certPEM: ecCert, keyPEM: pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey()), nil),
			wantErr: "private key does not match",
		},
		{
			name:    "not a CA",
			certPEM: selfSigned(t, ecKey, false, x509.KeyUsageDigitalSignature), keyPEM: pemOf(t, "EC PRIVATE KEY", sec1, nil),
			wantErr: "is not a CA",
		},
		{
			name:    "CA that may not sign certificates",
			certPEM: selfSigned(t, ecKey, true, x509.KeyUsageDigitalSignature), keyPEM: pemOf(t, "EC PRIVATE KEY", sec1, nil),
			wantErr: "lacks the certSign key usage",
		},
		{
			name:    "Ed25519 key",
			certPEM: selfSigned(t, edKey, true, x509.KeyUsageCertSign), keyPEM: pkcs8(t, edKey),
			wantErr: "unsupported private key type ed25519.PrivateKey",
		},
		{name: "no certificate", certPEM: []byte("garbage"), keyPEM: pemOf(t, "EC PRIVATE KEY", sec1, nil), wantErr: "no CERTIFICATE PEM block"},
		{name: "no key", certPEM: ecCert, keyPEM: ecParams, wantErr: "no PRIVATE KEY PEM block"},
		{
			name:    "corrupt certificate",
			certPEM: pemOf(t, "CERTIFICATE", []byte("junk"), nil), keyPEM: pemOf(t, "EC PRIVATE KEY", sec1, nil),
			wantErr: "parse certificate",
		},
		{name: "corrupt key", certPEM: ecCert, keyPEM: pemOf(t, "EC PRIVATE KEY", []byte("junk"), nil), wantErr: "parse EC PRIVATE KEY"},
		{name: "unknown key type", certPEM: ecCert, keyPEM: pemOf(t, "DSA PRIVATE KEY", []byte("junk"), nil), wantErr: `unsupported private key PEM type "DSA PRIVATE KEY"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca, err := Load(tt.certPEM, tt.keyPEM, WithClock(fixedClock))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.certPEM, ca.Bundle())
			// A loaded CA must be able to sign, and what it signs must verify against its bundle.
			certPEM, _, _, err := ca.IssueClientCert("alice", nil, nil, time.Minute)
			require.NoError(t, err)
			verify(t, ca, certPEM, x509.ExtKeyUsageClientAuth, "")
		})
	}
}

func pkcs8(t *testing.T, key any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	return pemOf(t, "PRIVATE KEY", der, err)
}

func TestLoadRoundTripsNew(t *testing.T) {
	ca, err := New("round trip", time.Hour)
	require.NoError(t, err)
	loaded, err := Load(ca.Bundle(), ca.PrivateKeyPEM())
	require.NoError(t, err)
	assert.Equal(t, ca.Bundle(), loaded.Bundle())
	assert.Equal(t, ca.PrivateKeyPEM(), loaded.PrivateKeyPEM())
}

func TestNew(t *testing.T) {
	ca, err := New("test CA", 24*time.Hour, WithClock(fixedClock))
	require.NoError(t, err)
	cert := ca.Certificate()
	assert.Equal(t, "test CA", cert.Subject.CommonName)
	assert.Equal(t, cert.Subject.String(), cert.Issuer.String())
	assert.True(t, cert.IsCA)
	assert.NotZero(t, cert.KeyUsage&x509.KeyUsageCertSign)
	assert.NotEmpty(t, cert.SubjectKeyId)
	assert.Equal(t, fixedNow.Add(-ClockSkew), cert.NotBefore)
	assert.Equal(t, fixedNow.Add(24*time.Hour), cert.NotAfter)
	assert.Equal(t, elliptic.P256(), cert.PublicKey.(*ecdsa.PublicKey).Curve)
	require.NoError(t, cert.CheckSignatureFrom(cert))

	keyBlock, _ := pem.Decode(ca.PrivateKeyPEM())
	require.NotNil(t, keyBlock)
	assert.Equal(t, "PRIVATE KEY", keyBlock.Type)

	// The returned slices are copies.
	ca.Bundle()[0] = 'X'
	assert.True(t, strings.HasPrefix(string(ca.Bundle()), "-----BEGIN CERTIFICATE-----"))
}

// verify checks that certPEM chains to ca for usage at fixedNow (and dnsName, if set), and returns it.
func verify(t *testing.T, ca *CA, certPEM []byte, usage x509.ExtKeyUsage, dnsName string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	require.Equal(t, "CERTIFICATE", block.Type)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca.Bundle()))
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: fixedNow, KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: dnsName})
	require.NoError(t, err)
	return cert
}

func TestIssueClientCert(t *testing.T) {
	ecCA, err := New("ec", time.Hour, WithClock(fixedClock))
	require.NoError(t, err)
	rsaCA, err := Load(selfSigned(t, rsaKey(), true, x509.KeyUsageCertSign),
		pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey()), nil), WithClock(fixedClock))
	require.NoError(t, err)

	tests := []struct {
		name     string
		ca       *CA
		username string
		groups   []string
	}{
		{name: "ECDSA CA with groups", ca: ecCA, username: "alice", groups: []string{"devs", "admins"}},
		{name: "ECDSA CA without groups", ca: ecCA, username: "bob"},
		{name: "RSA CA", ca: rsaCA, username: "carol", groups: []string{"ops"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certPEM, keyPEM, notAfter, err := tt.ca.IssueClientCert(tt.username, tt.groups, nil, 5*time.Minute)
			require.NoError(t, err)

			cert := verify(t, tt.ca, certPEM, x509.ExtKeyUsageClientAuth, "")
			assert.Equal(t, tt.username, cert.Subject.CommonName)
			assert.Equal(t, tt.groups, cert.Subject.Organization)
			assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, cert.ExtKeyUsage)
			assert.Equal(t, x509.KeyUsageDigitalSignature, cert.KeyUsage)
			assert.False(t, cert.IsCA)
			assert.Equal(t, fixedNow.Add(-ClockSkew), cert.NotBefore)
			assert.Equal(t, fixedNow.Add(5*time.Minute), cert.NotAfter)
			assert.Equal(t, cert.NotAfter, notAfter)
			assert.LessOrEqual(t, cert.SerialNumber.BitLen(), 128)
			assert.Positive(t, cert.SerialNumber.Sign())
			assert.Equal(t, tt.ca.Certificate().SubjectKeyId, cert.AuthorityKeyId)

			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			require.NoError(t, err, "key must match certificate")
			assert.Equal(t, elliptic.P256(), pair.PrivateKey.(*ecdsa.PrivateKey).Curve)
		})
	}
}

func TestIssueClientCertFreshKeyAndSerial(t *testing.T) {
	ca, err := New("ec", time.Hour)
	require.NoError(t, err)
	cert1, key1, _, err := ca.IssueClientCert("alice", nil, nil, time.Minute)
	require.NoError(t, err)
	cert2, key2, _, err := ca.IssueClientCert("alice", nil, nil, time.Minute)
	require.NoError(t, err)
	assert.NotEqual(t, key1, key2)
	c1, _ := pem.Decode(cert1)
	c2, _ := pem.Decode(cert2)
	p1, err := x509.ParseCertificate(c1.Bytes)
	require.NoError(t, err)
	p2, err := x509.ParseCertificate(c2.Bytes)
	require.NoError(t, err)
	assert.NotEqual(t, p1.SerialNumber, p2.SerialNumber)
}

func TestIssueServingCert(t *testing.T) {
	ca, err := New("serving", time.Hour, WithClock(fixedClock))
	require.NoError(t, err)

	certPEM, keyPEM, err := ca.IssueServingCert("api.ns.svc", []string{"api.ns.svc"}, []net.IP{net.ParseIP("10.0.0.1")}, time.Hour)
	require.NoError(t, err)
	cert := verify(t, ca, certPEM, x509.ExtKeyUsageServerAuth, "api.ns.svc")
	assert.Equal(t, "api.ns.svc", cert.Subject.CommonName)
	require.NoError(t, cert.VerifyHostname("10.0.0.1"))
	assert.Error(t, cert.VerifyHostname("other.ns.svc"))
	_, err = tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
}

func TestIssueErrors(t *testing.T) {
	ca, err := New("errors", time.Hour)
	require.NoError(t, err)
	_, _, _, err = ca.IssueClientCert("alice", nil, nil, 0)
	assert.ErrorContains(t, err, `issue certificate for "alice": ttl must be positive`)
	_, _, err = ca.IssueServingCert("nothing", nil, nil, time.Hour)
	assert.ErrorContains(t, err, "need at least one DNS name or IP address")

	expired, err := Load(ca.Bundle(), ca.PrivateKeyPEM(), WithClock(func() time.Time { return time.Now().Add(2 * time.Hour) }))
	require.NoError(t, err)
	_, _, _, err = expired.IssueClientCert("alice", nil, nil, time.Minute)
	assert.ErrorContains(t, err, `issue certificate for "alice": CA "CN=errors" expired at`)
}

// BenchmarkIssueClientCert measures one TokenCredentialRequest's certificate: with our own
// ECDSA CA (impersonation proxy signer) and with an RSA 2048 CA, the usual kube cluster signing key.
func BenchmarkIssueClientCert(b *testing.B) {
	ecCA, err := New("bench", time.Hour)
	require.NoError(b, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kube CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		BasicConstraintsValid: true, IsCA: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, rsaKey().Public(), rsaKey())
	require.NoError(b, err)
	rsaCA, err := Load(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey())}))
	require.NoError(b, err)

	groups := []string{"system:authenticated", "devs"}
	for _, bc := range []struct {
		name string
		ca   *CA
	}{{"ECDSA-P256-CA", ecCA}, {"RSA-2048-CA", rsaCA}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := bc.ca.IssueClientCert("alice", groups, nil, 5*time.Minute); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The expiry IssueClientCert returns is the certificate's as encoded, to the second, whatever the
// clock's fraction and zone.
func TestIssueClientCertReturnsEncodedExpiry(t *testing.T) {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	now := time.Date(2026, 12, 6, 18, 0, 0, 999_999_999, zone)
	ca, err := New("test", time.Hour, WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	certPEM, _, notAfter, err := ca.IssueClientCert("alice", nil, nil, 90*time.Second+time.Millisecond)
	require.NoError(t, err)
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Equal(t, cert.NotAfter, notAfter)
	assert.Equal(t, time.Date(2026, 12, 6, 12, 31, 31, 0, time.UTC), notAfter)
}
