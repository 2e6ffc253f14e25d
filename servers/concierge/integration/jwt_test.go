package integration

import (
	"crypto/rand"
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	"sealion.dev/core/testing/oidcissuer"
)

// TestJWTAuthenticatorStatus checks that each kind of bad spec shows as its failing condition,
// and that a good one goes Ready.
func TestJWTAuthenticatorStatus(t *testing.T) {
	issuer := oidcissuer.New(t)
	otherCA := oidcissuer.New(t).CABundle // a real CA, but not the one that signed the issuer
	tests := []struct {
		name   string
		spec   authv1alpha1.JWTAuthenticatorSpec
		wantOK func([]metav1.Condition) bool
		phase  authv1alpha1.Phase
	}{
		{
			name:  "good",
			spec:  authv1alpha1.JWTAuthenticatorSpec{Issuer: issuer.Issuer, Audience: "cluster-a", TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(issuer.CABundle)}},
			phase: authv1alpha1.PhaseReady,
			wantOK: func(c []metav1.Condition) bool {
				for _, typ := range []string{"Ready", "TLSConfigurationValid", "IssuerURLValid", "DiscoveryURLValid", "JWKSURLValid", "JWKSFetchValid", "AuthenticatorValid"} {
					if !hasCondition(typ, metav1.ConditionTrue, "Success")(c) {
						return false
					}
				}
				return true
			},
		},
		{
			name:   "unreachable issuer",
			spec:   authv1alpha1.JWTAuthenticatorSpec{Issuer: "https://127.0.0.1:1/issuer", Audience: "a"},
			phase:  authv1alpha1.PhaseError,
			wantOK: hasCondition("DiscoveryURLValid", metav1.ConditionFalse, "InvalidDiscoveryProbe"),
		},
		{
			name:   "CA that did not sign the issuer",
			spec:   authv1alpha1.JWTAuthenticatorSpec{Issuer: issuer.Issuer, Audience: "a", TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(otherCA)}},
			phase:  authv1alpha1.PhaseError,
			wantOK: hasCondition("DiscoveryURLValid", metav1.ConditionFalse, "InvalidDiscoveryProbe"),
		},
		{
			// As upstream, the issuer URL is judged on its own: status-watching tools read it.
			name:   "CA data that is not a certificate",
			spec:   authv1alpha1.JWTAuthenticatorSpec{Issuer: issuer.Issuer, Audience: "a", TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64([]byte("not a PEM"))}},
			phase:  authv1alpha1.PhaseError,
			wantOK: tlsInvalidURLJudged("IssuerURLValid", metav1.ConditionTrue, "Success", "issuer is a valid URL", "DiscoveryURLValid"),
		},
		{
			name:   "CA data that is not base64",
			spec:   authv1alpha1.JWTAuthenticatorSpec{Issuer: issuer.Issuer, Audience: "a", TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: "%%%"}},
			phase:  authv1alpha1.PhaseError,
			wantOK: tlsInvalidURLJudged("IssuerURLValid", metav1.ConditionTrue, "Success", "issuer is a valid URL", "DiscoveryURLValid"),
		},
		{
			name:   "CA data that is not a certificate and an issuer with a query",
			spec:   authv1alpha1.JWTAuthenticatorSpec{Issuer: "https://issuer.example.com?x=1", Audience: "a", TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64([]byte("not a PEM"))}},
			phase:  authv1alpha1.PhaseError,
			wantOK: tlsInvalidURLJudged("IssuerURLValid", metav1.ConditionFalse, "InvalidIssuerURLContainsQueryParams", "spec.issuer https://issuer.example.com?x=1 cannot include query params", "DiscoveryURLValid"),
		},
		{
			name:   "CA from a missing Secret",
			spec:   authv1alpha1.JWTAuthenticatorSpec{Issuer: issuer.Issuer, Audience: "a", TLS: &authv1alpha1.TLSSpec{CertificateAuthorityDataSource: &authv1alpha1.CertificateAuthorityDataSourceSpec{Kind: "Secret", Name: "nope", Key: "ca.crt"}}},
			phase:  authv1alpha1.PhaseError,
			wantOK: tlsInvalidURLJudged("IssuerURLValid", metav1.ConditionTrue, "Success", "issuer is a valid URL", "DiscoveryURLValid"),
		},
		{
			name:   "issuer with a query",
			spec:   authv1alpha1.JWTAuthenticatorSpec{Issuer: issuer.Issuer + "?x=1", Audience: "a"},
			phase:  authv1alpha1.PhaseError,
			wantOK: hasCondition("IssuerURLValid", metav1.ConditionFalse, "InvalidIssuerURLContainsQueryParams"),
		},
		{
			name: "username expression that does not compile",
			spec: authv1alpha1.JWTAuthenticatorSpec{Issuer: issuer.Issuer, Audience: "a", TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(issuer.CABundle)},
				Claims: authv1alpha1.JWTTokenClaims{UsernameExpression: "claims.sub +"}},
			phase: authv1alpha1.PhaseError,
			wantOK: func(c []metav1.Condition) bool {
				cond := condition(c, "AuthenticatorValid")
				return hasCondition("AuthenticatorValid", metav1.ConditionFalse, "InvalidAuthenticator")(c) &&
					strings.Contains(cond.Message, `claims.usernameExpression: Invalid value: "claims.sub +": compilation failed`)
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "status-" + string(rune('a'+i))
			createJWTAuthenticator(t, name, tt.spec)
			waitForJWTStatus(t, name, func(s authv1alpha1.JWTAuthenticatorStatus) bool {
				return s.Phase == tt.phase && tt.wantOK(s.Conditions)
			})
		})
	}
}

// TestTokenCredentialRequestJWT exchanges real JWTs through the aggregation layer and proves with a
// SelfSubjectReview that the kube-apiserver accepts the issued certificate; every bad token gets the
// same failure.
func TestTokenCredentialRequestJWT(t *testing.T) {
	issuer := oidcissuer.New(t)
	createJWTAuthenticator(t, "dex", authv1alpha1.JWTAuthenticatorSpec{
		Issuer: issuer.Issuer, Audience: "cluster-a",
		Claims: authv1alpha1.JWTTokenClaims{Username: "email", Groups: "roles"},
		TLS:    &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(issuer.CABundle)},
	})
	waitForJWTStatus(t, "dex", func(s authv1alpha1.JWTAuthenticatorStatus) bool { return s.Phase == authv1alpha1.PhaseReady })

	claims := map[string]any{"sub": "u1", "aud": "cluster-a", "email": "alice@example.com", "roles": []string{"devs", "ops"}}
	mintClaims := func(claims map[string]any, opts ...oidcissuer.IssueOption) string {
		tok, err := issuer.Issue(claims, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	mint := func(opts ...oidcissuer.IssueOption) string { return mintClaims(claims, opts...) }

	t.Run("valid token, ES256 and RS256", func(t *testing.T) {
		for _, tok := range []string{mint(), mint(oidcissuer.WithAlgorithm("RS256"))} {
			username, groups := whoami(t, exchange(t, "JWTAuthenticator", "dex", tok))
			if username != "alice@example.com" || !slices.Contains(groups, "devs") || !slices.Contains(groups, "ops") {
				t.Errorf("kube-apiserver sees %q %v", username, groups)
			}
		}
	})

	t.Run("signing keys rotated", func(t *testing.T) {
		if err := issuer.RotateKeys(); err != nil {
			t.Fatal(err)
		}
		username, _ := whoami(t, exchange(t, "JWTAuthenticator", "dex", mint()))
		if username != "alice@example.com" {
			t.Errorf("after rotation the kube-apiserver sees %q", username)
		}
	})

	unsigned, err := issuer.IssueUnsigned(claims)
	if err != nil {
		t.Fatal(err)
	}
	// Valid tokens whose identity Kubernetes reserves: a certificate for them would carry the
	// cluster's own powers (system:masters is cluster-admin without RBAC).
	reservedGroup := mintClaims(map[string]any{"sub": "u2", "aud": "cluster-a", "email": "mallory@example.com", "roles": []string{"devs", "system:masters"}})
	reservedUser := mintClaims(map[string]any{"sub": "u3", "aud": "cluster-a", "email": "system:admin", "roles": []string{"devs"}})
	random := make([]byte, 64)
	_, _ = rand.Read(random)
	bad := map[string]struct{ authenticator, token string }{
		"wrong audience":        {"dex", mint(oidcissuer.WithAudience("cluster-b"))},
		"wrong issuer":          {"dex", mint(oidcissuer.WithIssuerClaim("https://evil.example.com"))},
		"expired":               {"dex", mint(oidcissuer.Expired())},
		"not yet valid":         {"dex", mint(oidcissuer.NotYetValid())},
		"wrong signature":       {"dex", mint(oidcissuer.WithWrongSignature())},
		"alg none":              {"dex", unsigned},
		"unknown authenticator": {"nope", mint()},
		"random bytes":          {"dex", base64.RawURLEncoding.EncodeToString(random)},
		"reserved group":        {"dex", reservedGroup},
		"reserved username":     {"dex", reservedUser},
	}
	for name, tt := range bad {
		t.Run(name, func(t *testing.T) {
			requireFailed(t, exchange(t, "JWTAuthenticator", tt.authenticator, tt.token))
		})
	}
	// A missing token is a malformed request rather than a bad credential: 422, as upstream's.
	t.Run("empty token", func(t *testing.T) {
		_, err := createTokenCredentialRequest("JWTAuthenticator", "dex", "")
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.token.value: Required value: token must be supplied") {
			t.Fatalf("got %v, want 422 Invalid naming spec.token.value", err)
		}
	})
}

// TestTokenCredentialRequestJWTCEL proves the CEL fields of a JWTAuthenticator survive the real
// kube-apiserver's CRD handling and decide exchanges: the mappings make the identity the
// kube-apiserver sees, and each rule refuses the token or user it names with the uniform failure.
func TestTokenCredentialRequestJWTCEL(t *testing.T) {
	issuer := oidcissuer.New(t)
	createJWTAuthenticator(t, "cel", authv1alpha1.JWTAuthenticatorSpec{
		Issuer: issuer.Issuer, Audience: "cluster-a",
		Claims: authv1alpha1.JWTTokenClaims{
			UsernameExpression: `"oidc:" + claims.sub`,
			GroupsExpression:   `dyn(claims.roles).map(r, "role:" + r)`,
		},
		ClaimValidationRules: []authv1alpha1.ClaimValidationRule{
			{Claim: "hd", RequiredValue: "example.com"},
			{Expression: `claims.tenant == "acme"`, Message: "only acme"},
		},
		UserValidationRules: []authv1alpha1.UserValidationRule{
			{Expression: `!user.username.startsWith("oidc:mallory")`, Message: "mallory may not log in"},
		},
		TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(issuer.CABundle)},
	})
	waitForJWTStatus(t, "cel", func(s authv1alpha1.JWTAuthenticatorStatus) bool { return s.Phase == authv1alpha1.PhaseReady })

	mint := func(changes map[string]any) string {
		claims := map[string]any{"sub": "alice", "aud": "cluster-a", "hd": "example.com", "tenant": "acme", "roles": []string{"devs"}}
		for k, v := range changes {
			claims[k] = v
		}
		tok, err := issuer.Issue(claims)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	username, groups := whoami(t, exchange(t, "JWTAuthenticator", "cel", mint(nil)))
	if username != "oidc:alice" || !slices.Contains(groups, "role:devs") {
		t.Errorf("kube-apiserver sees %q %v, want oidc:alice in role:devs", username, groups)
	}
	for name, changes := range map[string]map[string]any{
		"claim with the wrong value":   {"hd": "evil.example"},
		"claim expression false":       {"tenant": "other"},
		"user rule false":              {"sub": "mallory"},
		"expression fails at run time": {"roles": "devs"},
	} {
		t.Run(name, func(t *testing.T) {
			requireFailed(t, exchange(t, "JWTAuthenticator", "cel", mint(changes)))
		})
	}
}
