package provider

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestStateCodec(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := &stateCodec{key: key(t)}
	in := UpstreamState{Version: stateVersion, Params: "client_id=pinniped-cli", IDP: "idp", Nonce: "n", PKCEVerifier: "v", CSRF: "c", IssuedAt: now}
	encoded, err := c.encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(encoded, "pinniped-cli") {
		t.Error("the state is readable by the upstream")
	}
	out, err := c.decode(encoded, now.Add(StateLifetime))
	if err != nil || *out != in {
		t.Fatalf("decode = %+v, %v; want %+v", out, err, in)
	}

	sealed, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil {
		t.Fatal(err)
	}
	sealed[len(sealed)/2] ^= 1
	tampered := base64.RawURLEncoding.EncodeToString(sealed)
	other := &stateCodec{key: key(t)}
	tests := map[string]struct {
		codec   *stateCodec
		encoded string
		now     time.Time
		want    string
	}{
		"expired":   {c, encoded, now.Add(StateLifetime + time.Second), "expired"},
		"tampered":  {c, tampered, now, "not issued by this issuer"},
		"other key": {other, encoded, now, "not issued by this issuer"},
		"garbage":   {c, "%%%", now, "malformed"},
	}
	for name, tt := range tests {
		if _, err := tt.codec.decode(tt.encoded, tt.now); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: decode error %v, want %q", name, err, tt.want)
		}
	}
}

// key is a random AES-256 key.
func key(t *testing.T) []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}
