package signingkeys

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

func TestNewJWKSRoundTrip(t *testing.T) {
	data, err := NewJWKS()
	if err != nil {
		t.Fatal(err)
	}
	j, err := ParseJWKS(data)
	if err != nil {
		t.Fatalf("a new JWKS does not parse: %v", err)
	}
	if j.Active.KeyID != KeyID || j.Active.Algorithm != "ES256" || j.Active.Use != "sig" {
		t.Errorf("active key has kid %q alg %q use %q", j.Active.KeyID, j.Active.Algorithm, j.Active.Use)
	}
	// The public set must carry no private material.
	if strings.Contains(string(data[JWKSPublicKey]), `"d"`) {
		t.Errorf("the public JWKS holds a private key: %s", data[JWKSPublicKey])
	}

	// A token signed with the active key verifies with the public set.
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: j.Active}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign([]byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	compact, _ := jws.CompactSerialize()
	parsed, err := jose.ParseSigned(compact, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parsed.Verify(j.Public.Key(KeyID)[0]); err != nil {
		t.Errorf("verifying with the public set: %v", err)
	}

	other, _ := NewJWKS()
	if string(other[JWKSActiveKey]) == string(data[JWKSActiveKey]) {
		t.Error("two JWKS have the same key")
	}
}

func TestParseJWKSRejects(t *testing.T) {
	good, err := NewJWKS()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewJWKS()
	jwk := func(key any, alg string) []byte {
		b, err := json.Marshal(jose.JSONWebKey{Key: key, KeyID: KeyID, Algorithm: alg, Use: "sig"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	var goodActive jose.JSONWebKey
	_ = json.Unmarshal(good[JWKSActiveKey], &goodActive)

	tests := []struct {
		name   string
		change func(map[string][]byte)
		want   string
	}{
		{name: "missing active key", change: func(d map[string][]byte) { delete(d, JWKSActiveKey) }, want: JWKSActiveKey},
		{name: "garbage", change: func(d map[string][]byte) { d[JWKSActiveKey] = []byte("{") }, want: JWKSActiveKey},
		{name: "public active key", change: func(d map[string][]byte) { d[JWKSActiveKey], _ = json.Marshal(goodActive.Public()) }, want: "private"},
		{name: "P-384", change: func(d map[string][]byte) { d[JWKSActiveKey] = jwk(p384, "ES384") }, want: "P-256"},
		{name: "RSA", change: func(d map[string][]byte) { d[JWKSActiveKey] = jwk(rsaKey, "RS256") }, want: "EC"},
		{name: "missing public set", change: func(d map[string][]byte) { delete(d, JWKSPublicKey) }, want: JWKSPublicKey},
		{name: "public set of another key", change: func(d map[string][]byte) { d[JWKSPublicKey] = other[JWKSPublicKey] }, want: "is not the public key"},
		{name: "empty public set", change: func(d map[string][]byte) { d[JWKSPublicKey] = []byte(`{"keys":[]}`) }, want: "exactly one key"},
		{name: "private key in the public set", change: func(d map[string][]byte) {
			d[JWKSPublicKey], _ = json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{goodActive}})
		}, want: "is not the public key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := maps.Clone(good)
			tt.change(data)
			_, err := ParseJWKS(data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestSymmetricKeys(t *testing.T) {
	names := map[string]bool{}
	for _, s := range SymmetricKeys {
		name := s.SecretName("1234")
		if names[name] || !strings.HasSuffix(name, "-1234") {
			t.Errorf("bad or duplicate Secret name %q", name)
		}
		names[name] = true

		data, err := s.New()
		if err != nil {
			t.Fatal(err)
		}
		key, err := s.Parse(data)
		if err != nil || len(key) != SymmetricKeySize {
			t.Errorf("%s: parsing a new key: %d bytes, %v", s.Purpose, len(key), err)
		}
		if _, err := s.Parse(map[string][]byte{SymmetricKeyDataKey: key[:16]}); err == nil {
			t.Errorf("%s: a short key was accepted", s.Purpose)
		}
		if _, err := s.Parse(nil); err == nil {
			t.Errorf("%s: a missing key was accepted", s.Purpose)
		}
	}
}
