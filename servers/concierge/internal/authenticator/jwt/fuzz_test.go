package jwt

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"sealion.dev/core/testing/oidcissuer"
)

// Ways FuzzJWTClaims mints a token from the fuzzed claims.
const (
	signedByIssuer = iota
	signedByStranger
	unsigned
	rawToken // the input is the token itself
	mintings
)

// FuzzJWTClaims authenticates tokens carrying arbitrary claims, signed by the issuer, by a
// stranger naming the issuer's key, or not at all, and arbitrary strings as tokens. A token not
// signed by the issuer's key never authenticates; one that is authenticates only when its claims
// name this issuer, the audience and a string username, and then as exactly that username (an
// empty one included: the exchange, package credential, refuses it).
func FuzzJWTClaims(f *testing.F) {
	iss := oidcissuer.New(f)
	authn, result := New(context.Background(), Config{Issuer: iss.Issuer, Audience: audience, CABundle: iss.CABundle})
	if !result.OK() {
		f.Fatalf("New() failed: %v", result.Err())
	}
	f.Cleanup(authn.Close)

	for _, claims := range []string{
		`{"aud":"cluster-a","sub":"s","username":"alice","groups":["devs","ops"]}`,
		`{"aud":["cluster-a","other"],"sub":"s","username":"alice"}`,
		`{"aud":"cluster-b","sub":"s","username":"alice"}`,
		`{"aud":"cluster-a","sub":"s"}`,
		`{"aud":"cluster-a","sub":"s","username":7,"groups":"devs"}`,
		`{"aud":"cluster-a","sub":"s","username":"alice","exp":1}`,
		`{"aud":"cluster-a","sub":"s","username":"alice","iss":"https://elsewhere.example"}`,
		`{"aud":"cluster-a","sub":"s","username":"","groups":[null]}`,
		`{"aud":"cluster-a","sub":"s","username":"alice","email_verified":false,"nbf":"soon"}`,
	} {
		for how := range mintings {
			f.Add([]byte(claims), uint8(how))
		}
	}
	f.Add([]byte("eyJhbGciOiJub25lIn0.e30."), uint8(rawToken))
	f.Add([]byte("a.b.c"), uint8(rawToken))

	f.Fuzz(func(t *testing.T, input []byte, how uint8) {
		how %= mintings
		var claims map[string]any
		token := string(input)
		if how != rawToken {
			if json.Unmarshal(input, &claims) != nil || claims == nil {
				return
			}
			var err error
			switch how {
			case signedByIssuer:
				token, err = iss.Issue(claims)
			case signedByStranger:
				token, err = iss.Issue(claims, oidcissuer.WithWrongSignature())
			case unsigned:
				token, err = iss.IssueUnsigned(claims)
			}
			if err != nil {
				return // claims go-jose cannot serialize
			}
		}
		resp, ok, err := authn.AuthenticateToken(context.Background(), token)
		if !ok {
			if resp != nil {
				t.Fatalf("a rejection came with a user: %+v (err %v)", resp.User, err)
			}
			return
		}
		if how != signedByIssuer {
			t.Fatalf("a token not signed by the issuer (minting %d) authenticated %+v: %q", how, resp.User, token)
		}
		if name, _ := claims["username"].(string); resp.User.GetName() != name {
			t.Fatalf("authenticated as %q from claims %s", resp.User.GetName(), input)
		}
		// go-oidc reads the registered claims as encoding/json does, ignoring case ("Aud" is aud;
		// testdata/fuzz has one): the issuer signed them, so that is its word.
		if _, set := claims["iss"]; set && !claimed(claims, "iss", func(v any) bool { return v == iss.Issuer }) {
			t.Fatalf("a token of another issuer authenticated %+v: %s", resp.User, input)
		}
		if !claimed(claims, "aud", func(v any) bool { return audienceIncludes(v, audience) }) {
			t.Fatalf("a token for another audience authenticated %+v: %s", resp.User, input)
		}
	})
}

// claimed reports whether a claim named name, in any case, has a value that ok accepts.
func claimed(claims map[string]any, name string, ok func(any) bool) bool {
	for n, v := range claims {
		if strings.EqualFold(n, name) && ok(v) {
			return true
		}
	}
	return false
}

func audienceIncludes(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		return slices.Contains(a, any(want))
	}
	return false
}
