// Package oidcissuer serves a real OpenID Connect issuer from a test: discovery document and
// JWKS over HTTPS with a certificate from a CA of its own, and ID tokens signed with ES256 or
// RS256 keys that can be rotated. It also mints deliberately invalid tokens, so authenticator
// tests can prove each kind is rejected.
package oidcissuer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

const (
	// DiscoveryPath is where the discovery document is served, relative to the issuer.
	DiscoveryPath = "/.well-known/openid-configuration"
	// JWKSPath is where the key set is served, relative to the issuer.
	JWKSPath = "/jwks.json"

	// DefaultLifetime is how long an issued token is valid unless its claims say otherwise.
	DefaultLifetime = 10 * time.Minute
)

// Algorithms are the signing algorithms the issuer has a key for.
var Algorithms = []jose.SignatureAlgorithm{jose.ES256, jose.RS256}

// Issuer is a running OIDC issuer.
type Issuer struct {
	// Issuer is the issuer URL (https, no trailing slash), as in the discovery document and `iss`.
	Issuer string
	// CABundle is the PEM CA certificate that the issuer's serving certificate chains to.
	CABundle []byte

	server            *httptest.Server
	discoveryOverride map[string]any
	endpoints         []endpoint

	mu           sync.Mutex
	keys         map[jose.SignatureAlgorithm]*jose.JSONWebKey // current private signing keys
	jwksRequests int
}

// Option changes how the issuer is served.
type Option func(*Issuer)

// WithDiscoveryOverrides merges fields into the discovery document, e.g. a different
// "jwks_uri", to test how clients handle a misconfigured provider.
func WithDiscoveryOverrides(fields map[string]any) Option {
	return func(i *Issuer) { i.discoveryOverride = fields }
}

// WithEndpoint serves handler at pattern (an http.ServeMux pattern such as "POST /token") beside
// discovery and the JWKS, for tests of clients that go on to the issuer's other endpoints.
func WithEndpoint(pattern string, handler http.HandlerFunc) Option {
	return func(i *Issuer) { i.endpoints = append(i.endpoints, endpoint{pattern, handler}) }
}

type endpoint struct {
	pattern string
	handler http.HandlerFunc
}

// New starts an issuer on 127.0.0.1 and stops it when the test ends.
func New(t testing.TB, opts ...Option) *Issuer {
	t.Helper()
	i := &Issuer{}
	for _, opt := range opts {
		opt(i)
	}
	tlsConfig, caPEM, err := newServingTLS()
	if err != nil {
		t.Fatalf("creating issuer certificates: %v", err)
	}
	if err := i.RotateKeys(); err != nil {
		t.Fatalf("creating issuer signing keys: %v", err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET "+DiscoveryPath, i.serveDiscovery)
	mux.HandleFunc("GET "+JWKSPath, i.serveJWKS)
	for _, e := range i.endpoints {
		mux.HandleFunc(e.pattern, e.handler)
	}
	i.server = httptest.NewUnstartedServer(mux)
	i.server.TLS = tlsConfig
	i.server.StartTLS()
	t.Cleanup(i.server.Close)

	i.Issuer = i.server.URL
	i.CABundle = caPEM
	return i
}

// Close stops serving; later requests fail to connect. The test's cleanup also closes it.
func (i *Issuer) Close() { i.server.Close() }

// DiscoveryURL is the URL of the discovery document.
func (i *Issuer) DiscoveryURL() string { return i.Issuer + DiscoveryPath }

// JWKSURL is the URL of the key set.
func (i *Issuer) JWKSURL() string { return i.Issuer + JWKSPath }

// JWKSRequests counts how often the key set has been fetched, to observe client caching.
func (i *Issuer) JWKSRequests() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.jwksRequests
}

// RotateKeys replaces every signing key with a new one; the old keys leave the JWKS, so tokens
// they signed stop verifying.
func (i *Issuer) RotateKeys() error {
	keys := make(map[jose.SignatureAlgorithm]*jose.JSONWebKey, len(Algorithms))
	for _, alg := range Algorithms {
		key, err := newSigningKey(alg)
		if err != nil {
			return err
		}
		keys[alg] = key
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.keys = keys
	return nil
}

// KeyID returns the kid of the current key for alg.
func (i *Issuer) KeyID(alg jose.SignatureAlgorithm) string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.keys[alg].KeyID
}

func (i *Issuer) serveDiscovery(w http.ResponseWriter, _ *http.Request) {
	doc := map[string]any{
		"issuer":                                i.Issuer,
		"jwks_uri":                              i.JWKSURL(),
		"authorization_endpoint":                i.Issuer + "/authorize",
		"token_endpoint":                        i.Issuer + "/token",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": Algorithms,
	}
	maps.Copy(doc, i.discoveryOverride)
	writeJSON(w, doc)
}

func (i *Issuer) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	i.mu.Lock()
	i.jwksRequests++
	set := jose.JSONWebKeySet{}
	for _, alg := range Algorithms {
		set.Keys = append(set.Keys, i.keys[alg].Public())
	}
	i.mu.Unlock()
	writeJSON(w, set)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// issueSettings is what IssueOptions change.
type issueSettings struct {
	alg          jose.SignatureAlgorithm
	claims       map[string]any // applied over the caller's claims
	wrongSignKey bool
}

// IssueOption changes how a token is minted.
type IssueOption func(*issueSettings)

// WithAlgorithm signs with the key for alg (ES256 by default).
func WithAlgorithm(alg jose.SignatureAlgorithm) IssueOption {
	return func(s *issueSettings) { s.alg = alg }
}

// WithWrongSignature signs with a stranger's key while naming the issuer's current key in the
// header, so the verifier finds the key and the signature check fails.
func WithWrongSignature() IssueOption {
	return func(s *issueSettings) { s.wrongSignKey = true }
}

// Expired makes the token expired an hour ago.
func Expired() IssueOption {
	now := time.Now()
	return withClaims(map[string]any{"iat": now.Add(-2 * time.Hour).Unix(), "exp": now.Add(-time.Hour).Unix()})
}

// NotYetValid makes the token valid only from an hour from now.
func NotYetValid() IssueOption {
	now := time.Now()
	return withClaims(map[string]any{"nbf": now.Add(time.Hour).Unix(), "exp": now.Add(2 * time.Hour).Unix()})
}

// WithIssuerClaim overrides `iss`, e.g. to mint a token claiming to come from another issuer.
func WithIssuerClaim(iss string) IssueOption { return withClaims(map[string]any{"iss": iss}) }

// WithAudience overrides `aud`.
func WithAudience(aud ...string) IssueOption { return withClaims(map[string]any{"aud": aud}) }

func withClaims(c map[string]any) IssueOption {
	return func(s *issueSettings) {
		if s.claims == nil {
			s.claims = map[string]any{}
		}
		maps.Copy(s.claims, c)
	}
}

// Issue mints a signed JWT. `iss`, `iat`, `nbf` and `exp` (DefaultLifetime) are filled in unless
// claims set them; options apply last.
func (i *Issuer) Issue(claims map[string]any, opts ...IssueOption) (string, error) {
	settings := issueSettings{alg: jose.ES256}
	for _, opt := range opts {
		opt(&settings)
	}
	all := i.baseClaims()
	maps.Copy(all, claims)
	maps.Copy(all, settings.claims)

	i.mu.Lock()
	key, ok := i.keys[settings.alg]
	i.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("issuer has no key for algorithm %q", settings.alg)
	}
	if settings.wrongSignKey {
		stranger, err := newSigningKey(settings.alg)
		if err != nil {
			return "", err
		}
		stranger.KeyID = key.KeyID
		key = stranger
	}

	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: settings.alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("creating %s signer: %w", settings.alg, err)
	}
	token, err := jwt.Signed(signer).Claims(all).Serialize()
	if err != nil {
		return "", fmt.Errorf("signing token: %w", err)
	}
	return token, nil
}

// IssueUnsigned mints a token with `"alg": "none"` and an empty signature, filled in like Issue.
func (i *Issuer) IssueUnsigned(claims map[string]any) (string, error) {
	all := i.baseClaims()
	maps.Copy(all, claims)
	payload, err := json.Marshal(all)
	if err != nil {
		return "", fmt.Errorf("encoding claims: %w", err)
	}
	header := []byte(`{"alg":"none","typ":"JWT"}`)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(header) + "." + enc.EncodeToString(payload) + ".", nil
}

func (i *Issuer) baseClaims() map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": i.Issuer,
		"iat": now.Unix(),
		"nbf": now.Unix(),
		"exp": now.Add(DefaultLifetime).Unix(),
	}
}

func newSigningKey(alg jose.SignatureAlgorithm) (*jose.JSONWebKey, error) {
	var key crypto.Signer
	var err error
	switch alg {
	case jose.ES256:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.RS256:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		return nil, fmt.Errorf("unsupported signing algorithm %q", alg)
	}
	if err != nil {
		return nil, fmt.Errorf("generating %s key: %w", alg, err)
	}
	kid := make([]byte, 8)
	if _, err := rand.Read(kid); err != nil {
		return nil, fmt.Errorf("generating key id: %w", err)
	}
	return &jose.JSONWebKey{Key: key, KeyID: hex.EncodeToString(kid), Algorithm: string(alg), Use: "sig"}, nil
}

// newServingTLS creates a fresh CA and a certificate for 127.0.0.1 and localhost signed by it.
func newServingTLS() (*tls.Config, []byte, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "oidcissuer test CA"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing CA certificate: %w", err)
	}

	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating serving key: %w", err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "oidcissuer"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, leafKey.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing serving certificate: %w", err)
	}
	tlsConfig := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}},
	}
	return tlsConfig, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}
