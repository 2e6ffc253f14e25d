package credential_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"sealion.dev/core/certauthority"
	"sealion.dev/core/testing/oidcissuer"
	"sealion.dev/servers/concierge/internal/authenticator/jwt"
	"sealion.dev/servers/concierge/internal/authncache"
	"sealion.dev/servers/concierge/internal/credential"
	"sealion.dev/servers/concierge/internal/dynamicca"
)

// jwtExchanger wires a real JWT authenticator, trusting a real issuer served by the test, to a real
// certificate authority: the whole in-server token path.
func jwtExchanger(tb testing.TB) (*credential.Exchanger, authncache.Key, *oidcissuer.Issuer) {
	tb.Helper()
	issuer := oidcissuer.New(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, steps := jwt.New(ctx, jwt.Config{Issuer: issuer.Issuer, Audience: "cluster-a", CABundle: issuer.CABundle})
	if a == nil {
		tb.Fatalf("building the JWT authenticator: %v", steps.Err())
	}
	tb.Cleanup(a.Close)
	ca, err := certauthority.New("fuzz signer", time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	signer := dynamicca.New("fuzz signer")
	if err := signer.Set(ca.Bundle(), ca.PrivateKeyPEM()); err != nil {
		tb.Fatal(err)
	}
	key := authncache.Key{APIGroup: "authentication.concierge.pinniped.dev", Kind: "JWTAuthenticator", Name: "issuer"}
	var cache authncache.Cache
	cache.Store(key, a)
	return &credential.Exchanger{Authenticators: &cache, Issuer: signer}, key, issuer
}

// FuzzTokenCredentialRequest feeds arbitrary tokens to the exchange. Whatever the input, the answer
// is a credential for a genuinely valid token or exactly ErrAuthenticationFailed: never a panic,
// never another error that could leak why.
func FuzzTokenCredentialRequest(f *testing.F) {
	e, key, issuer := jwtExchanger(f)
	valid, err := issuer.Issue(map[string]any{"sub": "s", "aud": "cluster-a", "username": "alice", "groups": []string{"g"}})
	if err != nil {
		f.Fatal(err)
	}
	unsigned, err := issuer.IssueUnsigned(map[string]any{"aud": "cluster-a", "username": "alice"})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{valid, unsigned, "", "a.b.c", "....", "eyJhbGciOiJFUzI1NiJ9.e30.", "\x00\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		cred, err := e.Exchange(context.Background(), key, token)
		switch {
		case err == nil:
			if cred == nil || cred.ClientCertificateData == "" {
				t.Fatalf("success without a certificate for %q", token)
			}
		case !errors.Is(err, credential.ErrAuthenticationFailed) || err.Error() != "authentication failed":
			t.Fatalf("error %q is not the uniform failure", err)
		case cred != nil:
			t.Fatalf("a credential came with an error")
		}
	})
}
