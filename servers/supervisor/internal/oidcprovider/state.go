package oidcprovider

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// stateVersion is bumped whenever upstreamState changes incompatibly.
const stateVersion = "2"

// csrfCookie binds the upstream state to the browser that started the login.
const csrfCookie = "__Host-pinniped-csrf-v2"

// csrfCookieLifetime is how long the browser keeps the CSRF cookie.
const csrfCookieLifetime = 7 * 24 * time.Hour

// upstreamState is the state parameter sent to the upstream identity provider: everything the
// callback needs to finish the downstream authorize request, so nothing is stored until a user
// has logged in.
type upstreamState struct {
	Version string `json:"v"`
	// Params are the downstream authorize request's parameters, URL-encoded.
	Params string `json:"p"`
	// IDP is the display name of the chosen identity provider.
	IDP string `json:"i"`
	// Nonce and PKCEVerifier secure the upstream leg of the login.
	Nonce        string    `json:"n"`
	PKCEVerifier string    `json:"k"`
	CSRF         string    `json:"c"`
	IssuedAt     time.Time `json:"t"`
}

// stateCodec seals states with AES-256-GCM, so that they are both secret and tamper-proof.
type stateCodec struct{ key []byte }

func (c *stateCodec) aead() (cipher.AEAD, error) {
	block, err := aes.NewCipher(c.key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func (c *stateCodec) encode(s upstreamState) (string, error) {
	aead, err := c.aead()
	if err != nil {
		return "", err
	}
	plain, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte(stateVersion))), nil
}

func (c *stateCodec) decode(encoded string, now time.Time) (*upstreamState, error) {
	aead, err := c.aead()
	if err != nil {
		return nil, err
	}
	sealed, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil || len(sealed) < aead.NonceSize() {
		return nil, errors.New("malformed state parameter")
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(stateVersion))
	if err != nil {
		return nil, errors.New("state parameter was not issued by this issuer")
	}
	var s upstreamState
	if err := json.Unmarshal(plain, &s); err != nil {
		return nil, fmt.Errorf("decoding state parameter: %w", err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("state parameter has version %q, want %q", s.Version, stateVersion)
	}
	if now.After(s.IssuedAt.Add(StateLifetime)) {
		return nil, errors.New("state parameter has expired: start the login again")
	}
	return &s, nil
}

// randomString returns n random bytes, base64url-encoded.
func randomString(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
