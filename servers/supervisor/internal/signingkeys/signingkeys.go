// Package signingkeys makes and reads the keys the Supervisor keeps in Secrets, in Pinniped's
// formats: for each FederationDomain the ES256 key that signs ID tokens with the public JWKS
// clients verify them with and the 32-byte symmetric keys of opaque tokens and of the upstream
// state parameter, and for the whole Supervisor the key of the CSRF cookie. There is no scheduled
// rotation: a key is replaced when its Secret is missing or unreadable, so deleting the Secret
// rotates it.
package signingkeys

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-jose/go-jose/v4"
	corev1 "k8s.io/api/core/v1"
)

// The JWKS Secret.
const (
	// JWKSSecretType is the type of the Secret holding a FederationDomain's JWKS.
	JWKSSecretType corev1.SecretType = "secrets.pinniped.dev/federation-domain-jwks"
	// JWKSActiveKey holds the private signing key as a JWK.
	JWKSActiveKey = "activeJWK"
	// JWKSPublicKey holds the public JWKS served at <issuer>/jwks.json.
	JWKSPublicKey = "jwks"
	// KeyID is the kid of every signing key; only one key is published at a time.
	KeyID = "pinniped-supervisor-key"
	// Algorithm is the signing algorithm of ID tokens.
	Algorithm = string(jose.ES256)
)

// GeneratedAtAnnotation records on a JWKS Secret when its key was generated (RFC 3339), so that the
// key's age survives in-place replacement; a Secret without it holds a key as old as the Secret.
const GeneratedAtAnnotation = "supervisor.sealion.dev/key-generated-at"

// JWKSSecretName is the name of the JWKS Secret of the FederationDomain named fdName.
func JWKSSecretName(fdName string) string { return fdName + "-jwks" }

// JWKS is a FederationDomain's signing key and the public key set clients verify with.
type JWKS struct {
	// Active is the private signing key.
	Active jose.JSONWebKey
	// Public is what <issuer>/jwks.json serves.
	Public jose.JSONWebKeySet
}

// NewJWKS generates a new P-256 signing key and returns the Secret data holding it.
func NewJWKS() (map[string][]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating an ES256 signing key: %w", err)
	}
	active := jose.JSONWebKey{Key: key, KeyID: KeyID, Algorithm: Algorithm, Use: "sig"}
	activeJSON, err := json.Marshal(active)
	if err != nil {
		return nil, fmt.Errorf("encoding the signing key: %w", err)
	}
	publicJSON, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{active.Public()}})
	if err != nil {
		return nil, fmt.Errorf("encoding the public key set: %w", err)
	}
	return map[string][]byte{JWKSActiveKey: activeJSON, JWKSPublicKey: publicJSON}, nil
}

// ParseJWKS reads the data of a JWKS Secret. It fails unless the active key is a private P-256
// key for ES256 and the public set holds exactly its public half.
func ParseJWKS(data map[string][]byte) (*JWKS, error) {
	var j JWKS
	if err := json.Unmarshal(data[JWKSActiveKey], &j.Active); err != nil {
		return nil, fmt.Errorf("%s: %w", JWKSActiveKey, err)
	}
	key, ok := j.Active.Key.(*ecdsa.PrivateKey)
	if !ok || j.Active.IsPublic() || !j.Active.Valid() {
		return nil, fmt.Errorf("%s: not a valid private EC key", JWKSActiveKey)
	}
	if key.Curve != elliptic.P256() || j.Active.Algorithm != Algorithm || j.Active.KeyID == "" {
		return nil, fmt.Errorf("%s: must be a P-256 key for %s with a key ID", JWKSActiveKey, Algorithm)
	}
	if err := json.Unmarshal(data[JWKSPublicKey], &j.Public); err != nil {
		return nil, fmt.Errorf("%s: %w", JWKSPublicKey, err)
	}
	if len(j.Public.Keys) != 1 {
		return nil, fmt.Errorf("%s: must hold exactly one key, has %d", JWKSPublicKey, len(j.Public.Keys))
	}
	pub := j.Public.Keys[0]
	pubKey, ok := pub.Key.(*ecdsa.PublicKey)
	if !ok || !pub.IsPublic() || pub.KeyID != j.Active.KeyID || pub.Algorithm != Algorithm || !pubKey.Equal(key.Public()) {
		return nil, fmt.Errorf("%s: is not the public key of %s", JWKSPublicKey, JWKSActiveKey)
	}
	return &j, nil
}

// Symmetric is one of the per-FederationDomain symmetric keys.
type Symmetric struct {
	// Purpose names the key in messages.
	Purpose string
	// Type is the type of its Secret.
	Type corev1.SecretType
	// namePrefix precedes the FederationDomain's UID in the Secret name.
	namePrefix string
}

// The symmetric keys of a FederationDomain.
var (
	// TokenSigningKey is the HMAC key of opaque access and refresh tokens and authorization codes.
	TokenSigningKey = Symmetric{
		Purpose:    "token signing",
		Type:       "secrets.pinniped.dev/federation-domain-token-signing-key",
		namePrefix: "pinniped-oidc-provider-hmac-key-",
	}
	// StateSigningKey signs the state parameter sent to upstream identity providers.
	StateSigningKey = Symmetric{
		Purpose:    "upstream state signing",
		Type:       "secrets.pinniped.dev/federation-domain-state-signing-key",
		namePrefix: "pinniped-oidc-provider-upstream-state-signature-key-",
	}
	// StateEncryptionKey encrypts the state parameter sent to upstream identity providers.
	StateEncryptionKey = Symmetric{
		Purpose:    "upstream state encryption",
		Type:       "secrets.pinniped.dev/federation-domain-state-encryption-key",
		namePrefix: "pinniped-oidc-provider-upstream-state-encryption-key-",
	}
)

// SymmetricKeys lists every symmetric key of a FederationDomain.
var SymmetricKeys = []Symmetric{TokenSigningKey, StateSigningKey, StateEncryptionKey}

// CSRFSigningKey signs the CSRF cookie of browser logins. Unlike the others it is one key for the
// whole Supervisor, since the cookie is the browser's for every issuer; its Secret is named by
// CSRFKeySecretName, not SecretName.
var CSRFSigningKey = Symmetric{
	Purpose: "CSRF cookie signing",
	Type:    "secrets.pinniped.dev/supervisor-csrf-signing-key",
}

// CSRFKeySecretName is the name of the CSRF signing key's Secret of the Supervisor whose
// Deployment is named deployment, as upstream names it.
func CSRFKeySecretName(deployment string) string { return deployment + "-key" }

// SymmetricKeyDataKey is the Secret data key holding a symmetric key.
const SymmetricKeyDataKey = "key"

// SymmetricKeySize is the length of every symmetric key in bytes.
const SymmetricKeySize = 32

// SecretName is the name of the key's Secret for the FederationDomain with UID fdUID.
func (s Symmetric) SecretName(fdUID string) string { return s.namePrefix + fdUID }

// New generates a key and returns the Secret data holding it.
func (s Symmetric) New() (map[string][]byte, error) {
	key := make([]byte, SymmetricKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generating the %s key: %w", s.Purpose, err)
	}
	return map[string][]byte{SymmetricKeyDataKey: key}, nil
}

// Parse reads the key from a Secret's data.
func (s Symmetric) Parse(data map[string][]byte) ([]byte, error) {
	key, ok := data[SymmetricKeyDataKey]
	if !ok {
		return nil, errors.New("no " + SymmetricKeyDataKey + " in the Secret")
	}
	if len(key) != SymmetricKeySize {
		return nil, fmt.Errorf("the %s key has %d bytes, want %d", s.Purpose, len(key), SymmetricKeySize)
	}
	return key, nil
}
