// Package jwt builds a token authenticator for JWTs from one OIDC issuer, on the upstream
// Kubernetes OIDC authenticator (structured JWTAuthenticator configuration), and reports each
// validation step separately so a controller can publish them as status conditions.
//
// The steps, in order: the CA bundle parses (TLSConfigurationValid); the issuer URL is https
// with no query, fragment or discovery path (IssuerURLValid); the discovery document is fetched
// (DiscoveryURLValid); its jwks_uri is an https URL (JWKSURLValid); the key set is fetched
// (JWKSFetchValid); the claim mappings and validation rules are valid and their CEL expressions
// compile, and the upstream authenticator accepts the configuration (AuthenticatorValid).
// The claim mappings and rules are those of Kubernetes' AuthenticationConfiguration, checked and
// evaluated by its own code (k8s.io/apiserver), so that they mean here what they mean there.
// Later the upstream verifier refetches the key set whenever a token names an unknown key,
// which is how issuer key rotation is picked up.
package jwt

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	upstreamoidc "k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
	"k8s.io/utils/ptr"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	"sealion.dev/core/cabundle"
	"sealion.dev/servers/concierge/internal/authenticator/authnmetrics"
	"sealion.dev/servers/concierge/internal/authenticator/checks"
)

const (
	// DefaultUsernameClaim is used when neither a username claim nor an expression is given.
	DefaultUsernameClaim = "username"
	// DefaultGroupsClaim is used when neither a groups claim nor an expression is given.
	DefaultGroupsClaim = "groups"

	wellKnownPath  = "/.well-known/openid-configuration"
	requestTimeout = 30 * time.Second
	// maxResponseBytes bounds every response read from an issuer (discovery document, key set):
	// go-oidc reads them whole, and neither an issuer nor whoever answers in its name may make the
	// Concierge hold an unbounded document.
	maxResponseBytes = 1 << 20
)

// steps are the condition types New reports, in the order it checks them.
var steps = []string{
	authv1alpha1.ConditionTLSConfigurationValid, authv1alpha1.ConditionIssuerURLValid,
	authv1alpha1.ConditionDiscoveryURLValid, authv1alpha1.ConditionJWKSURLValid,
	authv1alpha1.ConditionJWKSFetchValid, authv1alpha1.ConditionAuthenticatorValid,
}

// SigningAlgorithms are the JWS algorithms tokens may be signed with.
var SigningAlgorithms = []string{oidc.RS256, oidc.ES256}

// Config describes one issuer, as a JWTAuthenticator spec does.
type Config struct {
	// Issuer is the https issuer URL; it must equal the tokens' iss claim.
	Issuer string
	// Audience must be one of the tokens' aud values.
	Audience string
	// Claims maps the token's claims to the user (spec.claims).
	Claims authv1alpha1.JWTTokenClaims
	// ClaimValidationRules refuse tokens whose claims fail them (spec.claimValidationRules).
	ClaimValidationRules []authv1alpha1.ClaimValidationRule
	// UserValidationRules refuse the users that fail them (spec.userValidationRules).
	UserValidationRules []authv1alpha1.UserValidationRule
	// CABundle is PEM CA certificates trusted for the issuer; nil means the system roots.
	CABundle []byte
}

// Authenticator authenticates JWTs from one issuer. Close it when it is no longer used.
type Authenticator struct {
	token  authenticator.Token
	cancel context.CancelFunc
}

var _ authenticator.Token = (*Authenticator)(nil)

// AuthenticateToken validates the token's signature and claims and maps the claims to a user.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	return a.token.AuthenticateToken(ctx, token)
}

// Close stops key set fetches; call it when the authenticator is discarded.
func (a *Authenticator) Close() { a.cancel() }

// New validates cfg step by step and, when every step passes, returns a ready authenticator.
// ctx bounds the discovery and key set requests made here. The returned checks always cover
// every condition type; the authenticator is nil unless all of them passed.
func New(ctx context.Context, cfg Config) (*Authenticator, checks.List) {
	var result checks.List
	fail := func(typ, reason, format string, args ...any) (*Authenticator, checks.List) {
		result.FailAndSkipRest(steps, typ, reason, format, args...)
		return nil, result
	}

	client, err := httpClient(cfg.CABundle)
	if err != nil {
		result.Fail(authv1alpha1.ConditionTLSConfigurationValid, authv1alpha1.ReasonInvalidTLSConfig, "%v", err)
	} else {
		result.Pass(authv1alpha1.ConditionTLSConfigurationValid, cabundle.ValidMessage("spec.tls", cfg.CABundle))
	}
	// The issuer URL is judged on its own, whatever the TLS configuration, as upstream does.
	if !CheckIssuerURL(&result, cfg.Issuer) || err != nil {
		result.SkipAfter(steps, authv1alpha1.ConditionIssuerURLValid)
		return nil, result
	}

	probeCtx := oidc.ClientContext(ctx, client)
	provider, err := oidc.NewProvider(probeCtx, cfg.Issuer)
	if err != nil {
		return fail(authv1alpha1.ConditionDiscoveryURLValid, authv1alpha1.ReasonInvalidDiscoveryProbe,
			"could not perform oidc discovery on provider issuer: %s", truncate(err))
	}
	result.Pass(authv1alpha1.ConditionDiscoveryURLValid, "discovery performed successfully")

	var discovered struct {
		JWKSURL string `json:"jwks_uri"`
	}
	if err := provider.Claims(&discovered); err != nil {
		return fail(authv1alpha1.ConditionJWKSURLValid, authv1alpha1.ReasonInvalidProviderJWKSURL,
			"could not get provider jwks_uri: %v", err)
	}
	jwksURL, err := url.Parse(discovered.JWKSURL)
	switch {
	case discovered.JWKSURL == "":
		return fail(authv1alpha1.ConditionJWKSURLValid, authv1alpha1.ReasonInvalidProviderJWKSURL,
			"could not get provider jwks_uri: the discovery document has none")
	case err != nil:
		return fail(authv1alpha1.ConditionJWKSURLValid, authv1alpha1.ReasonInvalidProviderJWKSURL,
			"could not parse provider jwks_uri: %v", err)
	case jwksURL.Scheme != "https":
		return fail(authv1alpha1.ConditionJWKSURLValid, authv1alpha1.ReasonInvalidProviderJWKSURLScheme,
			"jwks_uri %s has invalid scheme, require 'https'", discovered.JWKSURL)
	}
	result.Pass(authv1alpha1.ConditionJWKSURLValid, "jwks_uri is a valid URL")

	keys, err := fetchKeySet(ctx, client, discovered.JWKSURL)
	if err != nil {
		return fail(authv1alpha1.ConditionJWKSFetchValid, authv1alpha1.ReasonInvalidCouldNotFetchJWKS, "could not fetch keys: %v", err)
	}
	result.Pass(authv1alpha1.ConditionJWKSFetchValid, "successfully fetched jwks")

	upstreamCfg := jwtAuthenticatorConfig(cfg)
	if err := validateClaimsAndRules(upstreamCfg); err != nil {
		return fail(authv1alpha1.ConditionAuthenticatorValid, authv1alpha1.ReasonInvalidAuthenticator,
			"could not initialize jwt authenticator: %v", err)
	}
	// The key set outlives New: its context is cancelled by Close, not by ctx. Its fetches, made
	// while serving exchanges, are counted.
	lifecycleCtx, cancel := context.WithCancel(oidc.ClientContext(context.Background(), client))
	keyClient := &http.Client{Transport: authnmetrics.Transport(authnmetrics.KindJWT, client.Transport), Timeout: client.Timeout}
	remote := oidc.NewRemoteKeySet(oidc.ClientContext(lifecycleCtx, keyClient), discovered.JWKSURL)
	token, err := upstreamoidc.New(lifecycleCtx, upstreamoidc.Options{
		JWTAuthenticator:     upstreamCfg,
		KeySet:               &seededKeySet{seed: keys, remote: remote},
		Client:               client, // for distributed claims
		SupportedSigningAlgs: SigningAlgorithms,
	})
	if err != nil {
		cancel()
		// Upstream names the k8s OIDC authenticator here, which it fails to build.
		return fail(authv1alpha1.ConditionAuthenticatorValid, authv1alpha1.ReasonInvalidAuthenticator,
			"could not initialize oidc authenticator: %v", err)
	}
	result.Pass(authv1alpha1.ConditionAuthenticatorValid, "authenticator initialized")
	return &Authenticator{token: token, cancel: cancel}, result
}

// jwtAuthenticatorConfig maps cfg to the upstream structured configuration. A claim name maps
// with an empty prefix, so identities are exactly the claim values; when neither a claim nor an
// expression is given, the default claim is used.
func jwtAuthenticatorConfig(cfg Config) apiserverapi.JWTAuthenticator {
	var audiences []string
	if cfg.Audience != "" {
		audiences = []string{cfg.Audience}
	}
	extra := make([]apiserverapi.ExtraMapping, 0, len(cfg.Claims.Extra))
	for _, e := range cfg.Claims.Extra {
		extra = append(extra, apiserverapi.ExtraMapping{Key: e.Key, ValueExpression: e.ValueExpression})
	}
	claimRules := make([]apiserverapi.ClaimValidationRule, 0, len(cfg.ClaimValidationRules))
	for _, r := range cfg.ClaimValidationRules {
		claimRules = append(claimRules, apiserverapi.ClaimValidationRule{
			Claim: r.Claim, RequiredValue: r.RequiredValue, Expression: r.Expression, Message: r.Message,
		})
	}
	userRules := make([]apiserverapi.UserValidationRule, 0, len(cfg.UserValidationRules))
	for _, r := range cfg.UserValidationRules {
		userRules = append(userRules, apiserverapi.UserValidationRule{Expression: r.Expression, Message: r.Message})
	}
	return apiserverapi.JWTAuthenticator{
		Issuer: apiserverapi.Issuer{URL: cfg.Issuer, Audiences: audiences},
		ClaimMappings: apiserverapi.ClaimMappings{
			Username: claimOrExpression(cfg.Claims.Username, cfg.Claims.UsernameExpression, DefaultUsernameClaim),
			Groups:   claimOrExpression(cfg.Claims.Groups, cfg.Claims.GroupsExpression, DefaultGroupsClaim),
			Extra:    extra,
		},
		ClaimValidationRules: claimRules,
		UserValidationRules:  userRules,
	}
}

func claimOrExpression(claim, expression, defaultClaim string) apiserverapi.PrefixedClaimOrExpression {
	if claim == "" && expression == "" {
		claim = defaultClaim
	}
	mapping := apiserverapi.PrefixedClaimOrExpression{Claim: claim, Expression: expression}
	if claim != "" {
		mapping.Prefix = ptr.To("")
	}
	return mapping
}

// crdFieldNames renames the fields of Kubernetes' structured configuration, in its validation
// errors, to the JWTAuthenticator spec fields they came from. Longer names come first: the
// replacer tries them in this order.
var crdFieldNames = strings.NewReplacer(
	"claimMappings.username.expression", "claims.usernameExpression",
	"claimMappings.groups.expression", "claims.groupsExpression",
	"claimMappings.username", "claims.username",
	"claimMappings.groups", "claims.groups",
	"claimMappings.extra", "claims.extra",
)

// validateClaimsAndRules checks the claim mappings and validation rules as the kube-apiserver
// checks an AuthenticationConfiguration, compiling every CEL expression, so that an invalid
// spec is reported in full, in the spec's own field names. One more rule is ours, as upstream
// Pinniped's: a certificate carries each extra as "key=value", so a key may not hold "=".
func validateClaimsAndRules(jwtAuthn apiserverapi.JWTAuthenticator) error {
	_, errs := apiservervalidation.CompileAndValidateJWTAuthenticator(authenticationcel.NewDefaultCompiler(), jwtAuthn, nil)
	for i, e := range jwtAuthn.ClaimMappings.Extra {
		if strings.Contains(e.Key, "=") {
			errs = append(errs, field.Invalid(field.NewPath("claimMappings", "extra").Index(i).Child("key"), e.Key,
				"Pinniped does not allow extra key names to contain equals sign"))
		}
	}
	if agg := errs.ToAggregate(); agg != nil {
		return errors.New(crdFieldNames.Replace(agg.Error()))
	}
	return nil
}

// validateIssuerURL returns a reason and message when issuer is not acceptable, checked in
// upstream's order and worded as upstream words them.
// CheckIssuerURL records IssuerURLValid for issuer in l and reports whether it passed.
func CheckIssuerURL(l *checks.List, issuer string) bool {
	if reason, msg := validateIssuerURL(issuer); reason != "" {
		l.Fail(authv1alpha1.ConditionIssuerURLValid, reason, "%s", msg)
		return false
	}
	l.Pass(authv1alpha1.ConditionIssuerURLValid, "issuer is a valid URL")
	return true
}

func validateIssuerURL(issuer string) (reason, message string) {
	u, err := url.Parse(issuer)
	switch {
	case err != nil:
		return authv1alpha1.ReasonInvalidIssuerURL, fmt.Sprintf("spec.issuer URL is invalid: %v", err)
	case u.Scheme != "https":
		return authv1alpha1.ReasonInvalidIssuerURLScheme, fmt.Sprintf("spec.issuer %s has invalid scheme, require 'https'", issuer)
	case u.Host == "":
		// Upstream lets this through to fail discovery; refused here, where it is clearer.
		return authv1alpha1.ReasonInvalidIssuerURL, "spec.issuer URL is invalid: the URL has no host"
	case strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), wellKnownPath):
		return authv1alpha1.ReasonInvalidIssuerURLContainsWellKnownEndpoint,
			fmt.Sprintf("spec.issuer %s cannot include path '%s'", issuer, wellKnownPath)
	case u.RawQuery != "" || u.ForceQuery:
		return authv1alpha1.ReasonInvalidIssuerURLContainsQueryParams, fmt.Sprintf("spec.issuer %s cannot include query params", issuer)
	case u.Fragment != "" || strings.Contains(issuer, "#"):
		return authv1alpha1.ReasonInvalidIssuerURLContainsFragment, fmt.Sprintf("spec.issuer %s cannot include fragment", issuer)
	}
	return "", ""
}

// truncate shortens a discovery error to 300 characters, as upstream does, unless it is one of
// go-oidc's or x509's, which are kept whole.
func truncate(err error) string {
	const limit = 300
	msg := err.Error()
	if len(msg) <= limit || strings.Contains(msg, "oidc:") || strings.Contains(msg, "x509:") {
		return msg
	}
	return fmt.Sprintf("%s [truncated %d chars]", msg[:limit], len(msg)-limit)
}

// httpClient trusts caBundle, or the system roots when it is nil.
func httpClient(caBundle []byte) (*http.Client, error) {
	var roots *x509.CertPool
	if caBundle != nil {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(caBundle) {
			return nil, fmt.Errorf("the CA bundle holds no PEM certificate")
		}
	}
	transport := utilnet.SetTransportDefaults(&http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	})
	return &http.Client{Transport: boundedBodies{transport}, Timeout: requestTimeout}, nil
}

// boundedBodies fails the reading of any response body longer than maxResponseBytes.
type boundedBodies struct{ http.RoundTripper }

func (b boundedBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.RoundTripper.RoundTrip(r)
	if err == nil {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxResponseBytes}
	}
	return resp, err
}

// boundedBody errors, rather than truncating, once more than its limit is read: a truncated
// document would fail later with a misleading parse error.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var probe [1]byte
		if n, err := b.ReadCloser.Read(probe[:]); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("the response is larger than %d bytes", maxResponseBytes)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// fetchKeySet gets the issuer's key set once, so an unreachable or malformed JWKS is reported
// at configuration time rather than on the first login.
func fetchKeySet(ctx context.Context, client *http.Client, jwksURL string) (*oidc.StaticKeySet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwksURL, nil)
	if err != nil {
		return nil, fmt.Errorf("could not build request for jwks %q: %w", jwksURL, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("could not fetch jwks from %q: %w", jwksURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("could not read jwks from %q: %w", jwksURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching jwks from %q: status %s", jwksURL, resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("jwks from %q is not a valid JSON Web Key Set: %w", jwksURL, err)
	}
	if len(set.Keys) == 0 {
		return nil, fmt.Errorf("jwks from %q holds no keys", jwksURL)
	}
	keys := &oidc.StaticKeySet{}
	for _, k := range set.Keys {
		if k.Valid() && k.IsPublic() && (k.Use == "" || k.Use == "sig") {
			keys.PublicKeys = append(keys.PublicKeys, k.Key)
		}
	}
	return keys, nil
}

// seededKeySet verifies tokens with the keys fetched when the authenticator was built until the
// issuer's key set has to be asked: a replica that has just started accepts its first tokens
// without reaching the issuer, which may be restarting too (a fetch then failed, and with it a
// user's exchange). A token the seed does not verify, as after a key rotation, goes to the remote
// key set, which fetches the issuer's keys; once that has verified a token the seed is retired,
// so a key the issuer has since removed is not trusted longer than the remote key set would.
type seededKeySet struct {
	seed    *oidc.StaticKeySet
	remote  oidc.KeySet
	retired atomic.Bool
}

func (k *seededKeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	if !k.retired.Load() {
		if payload, err := k.seed.VerifySignature(ctx, jwt); err == nil {
			return payload, nil
		}
	}
	payload, err := k.remote.VerifySignature(ctx, jwt)
	if err == nil {
		k.retired.Store(true)
	}
	return payload, err
}
