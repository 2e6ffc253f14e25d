package oidcissuer

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func httpClient(t *testing.T, caPEM []byte) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CABundle holds no certificate")
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
}

func getJSON(t *testing.T, client *http.Client, url string, into any) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("decoding %s: %v", url, err)
	}
}

func TestDiscovery(t *testing.T) {
	iss := New(t, WithDiscoveryOverrides(map[string]any{"extra": "value"}))
	client := httpClient(t, iss.CABundle)

	if !strings.HasPrefix(iss.Issuer, "https://127.0.0.1:") {
		t.Errorf("Issuer = %q; want an https URL on 127.0.0.1", iss.Issuer)
	}
	var doc map[string]any
	getJSON(t, client, iss.DiscoveryURL(), &doc)
	if doc["issuer"] != iss.Issuer || doc["jwks_uri"] != iss.JWKSURL() || doc["extra"] != "value" {
		t.Errorf("discovery document = %v", doc)
	}

	if _, err := getDiscovery(client, New(t)); err == nil {
		t.Error("another issuer's certificate was trusted with this issuer's CA bundle")
	}
}

// getDiscovery fetches the discovery document and reports only whether the request worked.
func getDiscovery(client *http.Client, iss *Issuer) (*http.Response, error) {
	resp, err := client.Get(iss.DiscoveryURL())
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}

func TestIssueVerifiesAgainstJWKS(t *testing.T) {
	iss := New(t)
	client := httpClient(t, iss.CABundle)

	for _, alg := range Algorithms {
		t.Run(string(alg), func(t *testing.T) {
			raw, err := iss.Issue(map[string]any{"sub": "alice", "aud": "cluster-a"}, WithAlgorithm(alg))
			if err != nil {
				t.Fatal(err)
			}
			var set jose.JSONWebKeySet
			getJSON(t, client, iss.JWKSURL(), &set)
			claims := verify(t, raw, set, alg)
			if claims.Issuer != iss.Issuer || claims.Subject != "alice" || !claims.Audience.Contains("cluster-a") {
				t.Errorf("claims = %+v", claims)
			}
			if err := claims.Validate(jwt.Expected{Issuer: iss.Issuer, AnyAudience: jwt.Audience{"cluster-a"}, Time: time.Now()}); err != nil {
				t.Errorf("fresh token does not validate: %v", err)
			}
		})
	}
}

func verify(t *testing.T, raw string, set jose.JSONWebKeySet, alg jose.SignatureAlgorithm) jwt.Claims {
	t.Helper()
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{alg})
	if err != nil {
		t.Fatalf("parsing token: %v", err)
	}
	var claims jwt.Claims
	if err := tok.Claims(set, &claims); err != nil {
		t.Fatalf("verifying token against JWKS: %v", err)
	}
	return claims
}

func TestRotateKeys(t *testing.T) {
	iss := New(t)
	client := httpClient(t, iss.CABundle)
	oldKID := iss.KeyID(jose.ES256)
	oldToken, err := iss.Issue(map[string]any{"sub": "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if err := iss.RotateKeys(); err != nil {
		t.Fatal(err)
	}

	var set jose.JSONWebKeySet
	getJSON(t, client, iss.JWKSURL(), &set)
	if len(set.Key(oldKID)) != 0 {
		t.Errorf("old key %s is still in the JWKS after rotation", oldKID)
	}
	if len(set.Keys) != len(Algorithms) {
		t.Errorf("JWKS has %d keys; want one per algorithm (%d)", len(set.Keys), len(Algorithms))
	}
	for _, k := range set.Keys {
		if !k.IsPublic() {
			t.Errorf("JWKS leaks private key %s", k.KeyID)
		}
	}
	tok, err := jwt.ParseSigned(oldToken, Algorithms)
	if err != nil {
		t.Fatal(err)
	}
	if err := tok.Claims(set, &jwt.Claims{}); err == nil {
		t.Error("token signed with the rotated-out key still verifies")
	}
	if got := iss.JWKSRequests(); got != 1 {
		t.Errorf("JWKSRequests() = %d; want 1", got)
	}
}

func TestBadTokens(t *testing.T) {
	iss := New(t)
	var set jose.JSONWebKeySet
	getJSON(t, httpClient(t, iss.CABundle), iss.JWKSURL(), &set)
	now := time.Now()

	tests := []struct {
		name       string
		opts       []IssueOption
		wantVerify bool
		expected   jwt.Expected
	}{
		{name: "wrong signature", opts: []IssueOption{WithWrongSignature()}},
		{name: "wrong signature RS256", opts: []IssueOption{WithWrongSignature(), WithAlgorithm(jose.RS256)}},
		{name: "expired", opts: []IssueOption{Expired()}, wantVerify: true},
		{name: "not yet valid", opts: []IssueOption{NotYetValid()}, wantVerify: true},
		{name: "wrong issuer", opts: []IssueOption{WithIssuerClaim("https://elsewhere.example")}, wantVerify: true},
		{name: "wrong audience", opts: []IssueOption{WithAudience("someone-else")}, wantVerify: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := iss.Issue(map[string]any{"aud": "cluster-a"}, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := jwt.ParseSigned(raw, Algorithms)
			if err != nil {
				t.Fatal(err)
			}
			var claims jwt.Claims
			err = tok.Claims(set, &claims)
			if (err == nil) != tt.wantVerify {
				t.Fatalf("signature verification error = %v; want success %v", err, tt.wantVerify)
			}
			if !tt.wantVerify {
				return
			}
			// Correctly signed but invalid: the standard claim checks must reject it.
			if err := claims.Validate(jwt.Expected{Issuer: iss.Issuer, AnyAudience: jwt.Audience{"cluster-a"}, Time: now}); err == nil {
				t.Errorf("claims %+v pass validation", claims)
			}
		})
	}

	t.Run("alg none", func(t *testing.T) {
		raw, err := iss.IssueUnsigned(map[string]any{"sub": "mallory"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(raw, ".") || strings.Count(raw, ".") != 2 {
			t.Fatalf("unsigned token %q is not header.payload. form", raw)
		}
		if _, err := jwt.ParseSigned(raw, Algorithms); err == nil {
			t.Error("alg none token parsed as a signed token")
		}
	})
}

func TestClose(t *testing.T) {
	iss := New(t)
	iss.Close()
	if _, err := getDiscovery(httpClient(t, iss.CABundle), iss); err == nil {
		t.Error("closed issuer still answers")
	}
}
