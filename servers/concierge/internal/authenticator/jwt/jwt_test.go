package jwt

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics/legacyregistry"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	"sealion.dev/core/testing/oidcissuer"
	"sealion.dev/servers/concierge/internal/authenticator/authnmetrics"
	"sealion.dev/servers/concierge/internal/authenticator/checks"
)

const audience = "cluster-a"

var allConditionTypes = []string{
	authv1alpha1.ConditionTLSConfigurationValid, authv1alpha1.ConditionIssuerURLValid,
	authv1alpha1.ConditionDiscoveryURLValid, authv1alpha1.ConditionJWKSURLValid,
	authv1alpha1.ConditionJWKSFetchValid, authv1alpha1.ConditionAuthenticatorValid,
}

func newAuthenticator(t *testing.T, cfg Config) *Authenticator {
	t.Helper()
	authn, result := New(context.Background(), cfg)
	if !result.OK() || authn == nil {
		t.Fatalf("New() failed: %v", result.Err())
	}
	t.Cleanup(authn.Close)
	return authn
}

func TestAuthenticateToken(t *testing.T) {
	iss := oidcissuer.New(t)
	authn := newAuthenticator(t, Config{Issuer: iss.Issuer, Audience: audience, CABundle: iss.CABundle})
	ctx := context.Background()
	good := map[string]any{"aud": audience, "sub": "some-subject", "username": "alice", "groups": []string{"devs", "ops"}}

	for _, alg := range oidcissuer.Algorithms {
		t.Run("valid "+string(alg), func(t *testing.T) {
			token, err := iss.Issue(good, oidcissuer.WithAlgorithm(alg))
			if err != nil {
				t.Fatal(err)
			}
			resp, ok, err := authn.AuthenticateToken(ctx, token)
			if err != nil || !ok {
				t.Fatalf("AuthenticateToken() = %v, %v; want success", ok, err)
			}
			if got := resp.User.GetName(); got != "alice" {
				t.Errorf("username = %q; want alice (no prefix)", got)
			}
			if got := resp.User.GetGroups(); !slices.Equal(got, []string{"devs", "ops"}) {
				t.Errorf("groups = %q; want [devs ops] (no prefix)", got)
			}
		})
	}

	mint := func(opts ...oidcissuer.IssueOption) func() (string, error) {
		return func() (string, error) { return iss.Issue(good, opts...) }
	}
	bad := []struct {
		name  string
		token func() (string, error)
	}{
		{name: "wrong audience", token: mint(oidcissuer.WithAudience("cluster-b"))},
		{name: "wrong issuer", token: mint(oidcissuer.WithIssuerClaim("https://elsewhere.example"))},
		{name: "expired", token: mint(oidcissuer.Expired())},
		{name: "not yet valid", token: mint(oidcissuer.NotYetValid())},
		{name: "wrong signature ES256", token: mint(oidcissuer.WithWrongSignature())},
		{name: "wrong signature RS256", token: mint(oidcissuer.WithWrongSignature(), oidcissuer.WithAlgorithm(jose.RS256))},
		{name: "alg none", token: func() (string, error) { return iss.IssueUnsigned(good) }},
		{name: "missing username claim", token: func() (string, error) { return iss.Issue(map[string]any{"aud": audience, "sub": "x"}) }},
		{name: "empty", token: func() (string, error) { return "", nil }},
		{name: "random bytes", token: func() (string, error) { return "\x8f\x00garbage\xff.not-a.jwt", nil }},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			token, err := tt.token()
			if err != nil {
				t.Fatal(err)
			}
			if resp, ok, err := authn.AuthenticateToken(ctx, token); ok || resp != nil {
				t.Fatalf("AuthenticateToken() = %+v, %v, %v; want rejection", resp, ok, err)
			}
		})
	}
}

func TestCustomClaims(t *testing.T) {
	iss := oidcissuer.New(t)
	authn := newAuthenticator(t, Config{Issuer: iss.Issuer, Audience: audience, CABundle: iss.CABundle,
		Claims: authv1alpha1.JWTTokenClaims{Username: "sub", Groups: "roles"}})
	token, err := iss.Issue(map[string]any{"aud": audience, "sub": "bob", "roles": []string{"admins"}, "groups": []string{"ignored"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, ok, err := authn.AuthenticateToken(context.Background(), token)
	if err != nil || !ok {
		t.Fatalf("AuthenticateToken() = %v, %v", ok, err)
	}
	if resp.User.GetName() != "bob" || !slices.Equal(resp.User.GetGroups(), []string{"admins"}) {
		t.Errorf("user = %q %q; want bob [admins]", resp.User.GetName(), resp.User.GetGroups())
	}
}

// TestKeyRotation proves the verifier refetches the JWKS when a token names an unknown key.
func TestKeyRotation(t *testing.T) {
	iss := oidcissuer.New(t)
	authn := newAuthenticator(t, Config{Issuer: iss.Issuer, Audience: audience, CABundle: iss.CABundle})
	ctx := context.Background()
	claims := map[string]any{"aud": audience, "username": "alice"}

	oldToken, err := iss.Issue(claims)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := authn.AuthenticateToken(ctx, oldToken); !ok {
		t.Fatalf("token before rotation rejected: %v", err)
	}
	fetchesBefore := iss.JWKSRequests()
	authnmetrics.RegisterMetrics() // component-base metrics count nothing until registered
	countedBefore := keySetFetches(t)

	if err := iss.RotateKeys(); err != nil {
		t.Fatal(err)
	}
	newToken, err := iss.Issue(claims)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := authn.AuthenticateToken(ctx, newToken); !ok {
		t.Fatalf("token signed with the rotated-in key rejected: %v", err)
	}
	if iss.JWKSRequests() <= fetchesBefore {
		t.Errorf("JWKS fetched %d times before and %d after rotation; want a refetch", fetchesBefore, iss.JWKSRequests())
	}
	if counted := keySetFetches(t); counted < countedBefore+1 {
		t.Errorf("authenticator_upstream_requests_total{JWTAuthenticator,success} went from %v to %v; want the refetch counted", countedBefore, counted)
	}
	// go-oidc hands the refetched keys to the waiting verification a moment before it replaces
	// its cache, so a verification in that moment still sees the old keys.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, ok, _ := authn.AuthenticateToken(ctx, oldToken)
		return !ok, nil
	}); err != nil {
		t.Error("token signed with the rotated-out key still accepted")
	}
}

// A new authenticator verifies tokens with the keys it fetched when it was built: its first token
// does not wait for the issuer, which may be restarting when a new Concierge replica starts.
func TestFirstTokenNeedsNoFetch(t *testing.T) {
	iss := oidcissuer.New(t)
	authn := newAuthenticator(t, Config{Issuer: iss.Issuer, Audience: audience, CABundle: iss.CABundle})
	fetched := iss.JWKSRequests()
	token, err := iss.Issue(map[string]any{"aud": audience, "username": "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := authn.AuthenticateToken(context.Background(), token); !ok {
		t.Fatalf("token rejected: %v", err)
	}
	if n := iss.JWKSRequests() - fetched; n != 0 {
		t.Errorf("the first token fetched the key set %d more times; want the keys fetched when the authenticator was built", n)
	}
}

func TestNewReportsEachStep(t *testing.T) {
	iss := oidcissuer.New(t)
	otherIssuer := oidcissuer.New(t)
	closedIssuer := oidcissuer.New(t)
	closedIssuer.Close()
	httpJWKS := oidcissuer.New(t, oidcissuer.WithDiscoveryOverrides(map[string]any{"jwks_uri": "http://127.0.0.1/jwks.json"}))
	noJWKS := oidcissuer.New(t, oidcissuer.WithDiscoveryOverrides(map[string]any{"jwks_uri": ""}))
	deadJWKS := oidcissuer.New(t, oidcissuer.WithDiscoveryOverrides(map[string]any{"jwks_uri": closedIssuer.JWKSURL()}))
	hugeDiscovery := oidcissuer.New(t, oidcissuer.WithDiscoveryOverrides(map[string]any{"padding": strings.Repeat("x", maxResponseBytes)}))

	tests := []struct {
		name       string
		cfg        Config
		failedType string // "" means all pass
		wantReason string
		// wantURL is the status of the URL's condition when TLS failed: it is judged on its own.
		wantURL metav1.ConditionStatus
	}{
		{name: "valid", cfg: Config{Issuer: iss.Issuer, Audience: audience, CABundle: iss.CABundle}},
		{name: "CA bundle without certificates", cfg: Config{Issuer: iss.Issuer, Audience: audience, CABundle: []byte("not PEM")},
			failedType: authv1alpha1.ConditionTLSConfigurationValid, wantReason: authv1alpha1.ReasonInvalidTLSConfig, wantURL: metav1.ConditionTrue},
		{name: "CA bundle without certificates and an http issuer", cfg: Config{Issuer: "http://127.0.0.1/issuer", Audience: audience, CABundle: []byte("not PEM")},
			failedType: authv1alpha1.ConditionTLSConfigurationValid, wantReason: authv1alpha1.ReasonInvalidTLSConfig, wantURL: metav1.ConditionFalse},
		{name: "http issuer", cfg: Config{Issuer: "http://127.0.0.1/issuer", Audience: audience},
			failedType: authv1alpha1.ConditionIssuerURLValid, wantReason: authv1alpha1.ReasonInvalidIssuerURLScheme},
		{name: "issuer with query", cfg: Config{Issuer: iss.Issuer + "?a=b", Audience: audience},
			failedType: authv1alpha1.ConditionIssuerURLValid, wantReason: authv1alpha1.ReasonInvalidIssuerURLContainsQueryParams},
		{name: "issuer with fragment", cfg: Config{Issuer: iss.Issuer + "#x", Audience: audience},
			failedType: authv1alpha1.ConditionIssuerURLValid, wantReason: authv1alpha1.ReasonInvalidIssuerURLContainsFragment},
		{name: "issuer is the discovery URL", cfg: Config{Issuer: iss.DiscoveryURL(), Audience: audience},
			failedType: authv1alpha1.ConditionIssuerURLValid, wantReason: authv1alpha1.ReasonInvalidIssuerURLContainsWellKnownEndpoint},
		{name: "unparsable issuer", cfg: Config{Issuer: "https://[::1", Audience: audience},
			failedType: authv1alpha1.ConditionIssuerURLValid, wantReason: authv1alpha1.ReasonInvalidIssuerURL},
		{name: "unreachable issuer", cfg: Config{Issuer: closedIssuer.Issuer, Audience: audience, CABundle: closedIssuer.CABundle},
			failedType: authv1alpha1.ConditionDiscoveryURLValid, wantReason: authv1alpha1.ReasonInvalidDiscoveryProbe},
		{name: "CA of another issuer", cfg: Config{Issuer: iss.Issuer, Audience: audience, CABundle: otherIssuer.CABundle},
			failedType: authv1alpha1.ConditionDiscoveryURLValid, wantReason: authv1alpha1.ReasonInvalidDiscoveryProbe},
		{name: "system roots do not trust a private issuer", cfg: Config{Issuer: iss.Issuer, Audience: audience},
			failedType: authv1alpha1.ConditionDiscoveryURLValid, wantReason: authv1alpha1.ReasonInvalidDiscoveryProbe},
		{name: "discovery document over the size limit", cfg: Config{Issuer: hugeDiscovery.Issuer, Audience: audience, CABundle: hugeDiscovery.CABundle},
			failedType: authv1alpha1.ConditionDiscoveryURLValid, wantReason: authv1alpha1.ReasonInvalidDiscoveryProbe},
		{name: "http jwks_uri", cfg: Config{Issuer: httpJWKS.Issuer, Audience: audience, CABundle: httpJWKS.CABundle},
			failedType: authv1alpha1.ConditionJWKSURLValid, wantReason: authv1alpha1.ReasonInvalidProviderJWKSURLScheme},
		{name: "no jwks_uri", cfg: Config{Issuer: noJWKS.Issuer, Audience: audience, CABundle: noJWKS.CABundle},
			failedType: authv1alpha1.ConditionJWKSURLValid, wantReason: authv1alpha1.ReasonInvalidProviderJWKSURL},
		{name: "unreachable jwks_uri", cfg: Config{Issuer: deadJWKS.Issuer, Audience: audience, CABundle: deadJWKS.CABundle},
			failedType: authv1alpha1.ConditionJWKSFetchValid, wantReason: authv1alpha1.ReasonInvalidCouldNotFetchJWKS},
		{name: "no audience", cfg: Config{Issuer: iss.Issuer, CABundle: iss.CABundle},
			failedType: authv1alpha1.ConditionAuthenticatorValid, wantReason: authv1alpha1.ReasonInvalidAuthenticator},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			authn, result := New(context.Background(), tt.cfg)
			if authn != nil {
				t.Cleanup(authn.Close)
			}
			assertChecks(t, result, tt.failedType, tt.wantReason, tt.wantURL)
			if (authn != nil) != (tt.failedType == "") {
				t.Errorf("authenticator returned = %v; want one only when every check passes", authn != nil)
			}
		})
	}
}

// assertChecks expects every condition type in order: True before failedType, False with
// wantReason at it, Unknown after it, but for the URL's condition after a TLS failure, which has
// the status wantURL.
func assertChecks(t *testing.T, result checks.List, failedType, wantReason string, wantURL metav1.ConditionStatus) {
	t.Helper()
	if len(result) != len(allConditionTypes) {
		t.Fatalf("got %d checks %+v; want one per condition type %v", len(result), result, allConditionTypes)
	}
	want := metav1.ConditionTrue
	for i, c := range result {
		if c.Type != allConditionTypes[i] {
			t.Fatalf("check %d has type %q; want %q", i, c.Type, allConditionTypes[i])
		}
		switch {
		case c.Type == failedType:
			t.Logf("%s: %s", c.Reason, c.Message)
			if c.Status != metav1.ConditionFalse || c.Reason != wantReason {
				t.Errorf("%s = %s/%s (%s); want False/%s", c.Type, c.Status, c.Reason, c.Message, wantReason)
			}
			want = metav1.ConditionUnknown
		case c.Type == authv1alpha1.ConditionIssuerURLValid && wantURL != "":
			if c.Status != wantURL {
				t.Errorf("%s = %s/%s (%s); want %s, judged on its own", c.Type, c.Status, c.Reason, c.Message, wantURL)
			}
		case c.Status != want:
			t.Errorf("%s = %s/%s (%s); want %s", c.Type, c.Status, c.Reason, c.Message, want)
		}
	}
}

// AuthenticatorValid is worded as upstream's: a spec the k8s validation refuses is reported
// with the field paths of the CRD, and the success message is upstream's too.
func TestNewAuthenticatorValidMessage(t *testing.T) {
	iss := oidcissuer.New(t)
	tests := []struct {
		name   string
		claims authv1alpha1.JWTTokenClaims
		want   metav1.Condition
	}{
		{name: "valid", want: metav1.Condition{Status: metav1.ConditionTrue, Reason: "Success", Message: "authenticator initialized"}},
		{name: "claim and expression", claims: authv1alpha1.JWTTokenClaims{Username: "sub", UsernameExpression: "claims.sub"},
			want: metav1.Condition{Status: metav1.ConditionFalse, Reason: authv1alpha1.ReasonInvalidAuthenticator,
				Message: `could not initialize jwt authenticator: claims.username: Invalid value: "": claim and expression can't both be set`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			authn, result := New(context.Background(), Config{Issuer: iss.Issuer, Audience: audience, CABundle: iss.CABundle, Claims: tt.claims})
			if authn != nil {
				t.Cleanup(authn.Close)
			}
			got := result[len(result)-1]
			if got.Type != authv1alpha1.ConditionAuthenticatorValid || got.Status != tt.want.Status || got.Reason != tt.want.Reason || got.Message != tt.want.Message {
				t.Errorf("last check = %s %s/%s %q; want AuthenticatorValid %s/%s %q", got.Type, got.Status, got.Reason, got.Message, tt.want.Status, tt.want.Reason, tt.want.Message)
			}
		})
	}
}

// keySetFetches reads the key set fetches that succeeded from the registry the Concierge serves.
func keySetFetches(t *testing.T) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "pinniped_concierge_authenticator_upstream_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["authenticator_kind"] == authnmetrics.KindJWT && labels["result"] == "success" {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatal("no pinniped_concierge_authenticator_upstream_requests_total{JWTAuthenticator,success} series")
	return 0
}
