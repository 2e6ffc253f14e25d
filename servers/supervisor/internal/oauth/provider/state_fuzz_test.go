package provider

import (
	"bytes"
	"encoding/base64"
	"testing"
	"time"
)

// FuzzStateDecode feeds arbitrary state parameters, starting from a genuine one and its near
// misses, to the callback's state decoding. Only a state this issuer sealed decodes, to exactly
// what was sealed; anything else (a flipped bit, a truncation, a state of another issuer,
// garbage) is an error and no state.
func FuzzStateDecode(f *testing.F) {
	// A fixed key keeps the seeds meaningful from one run to the next.
	c := &stateCodec{key: bytes.Repeat([]byte{7}, 32)}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	issued := UpstreamState{Version: stateVersion, Params: "client_id=pinniped-cli&state=s", IDP: "idp", Nonce: "n", PKCEVerifier: "v", CSRF: "c", IssuedAt: now}
	genuine, err := c.encode(issued)
	if err != nil {
		f.Fatal(err)
	}
	sealed, err := base64.RawURLEncoding.DecodeString(genuine)
	if err != nil {
		f.Fatal(err)
	}
	other, err := (&stateCodec{key: bytes.Repeat([]byte{8}, 32)}).encode(issued)
	if err != nil {
		f.Fatal(err)
	}
	flipped := bytes.Clone(sealed)
	flipped[len(flipped)/2] ^= 1
	for _, seed := range []string{
		genuine, other, base64.RawURLEncoding.EncodeToString(flipped), genuine[:len(genuine)-1], genuine + "A",
		genuine[:16], base64.StdEncoding.EncodeToString(sealed), "", "not base64!", "AAAA",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, encoded string) {
		got, err := c.decode(encoded, now)
		if err != nil {
			if got != nil {
				t.Fatalf("decode(%q) returned a state with error %v", encoded, err)
			}
			return
		}
		// Every fuzzing process seals issued with its own nonce, so other genuine seals turn up;
		// nothing else is ever sealed with this key.
		if *got != issued {
			t.Fatalf("decode(%q) = %+v; want the sealed %+v", encoded, got, issued)
		}
	})
}
