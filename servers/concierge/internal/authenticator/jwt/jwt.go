// Package jwt builds a token authenticator for JWTs from one OIDC issuer, on the upstream
// Kubernetes OIDC authenticator (structured JWTAuthenticator configuration), and reports each
// validation step separately so a controller can publish them as status conditions.
//
// The steps, in order: the CA bundle parses (TLSConfigurationValid); the issuer URL is https
// with no query, fragment or discovery path (IssuerURLValid); the discovery document is fetched
// (DiscoveryURLValid); its jwks_uri is an https URL (JWKSURLValid); the key set is fetched
// (JWKSFetchValid); the upstream authenticator accepts the configuration (AuthenticatorValid).
// Later the upstream verifier refetches the key set whenever a token names an unknown key,
// which is how issuer key rotation is picked up.
package jwt

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	upstreamoidc "k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
	"k8s.io/utils/ptr"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	"sealion.dev/core/cabundle"
	"sealion.dev/servers/concierge/internal/authenticator/checks"
)

const (
	// DefaultUsernameClaim is used when Config.UsernameClaim is empty.
	DefaultUsernameClaim = "username"
	// DefaultGroupsClaim is used when Config.GroupsClaim is empty.
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
	// UsernameClaim names the claim holding the username; "username" when empty.
	UsernameClaim string
	// GroupsClaim names the claim holding the groups; "groups" when empty.
	GroupsClaim string
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
		return fail(authv1alpha1.ConditionTLSConfigurationValid, authv1alpha1.ReasonInvalidTLSConfig, "%v", err)
	}
	result.Pass(authv1alpha1.ConditionTLSConfigurationValid, cabundle.ValidMessage("spec.tls", cfg.CABundle))

	if reason, msg := validateIssuerURL(cfg.Issuer); reason != "" {
		return fail(authv1alpha1.ConditionIssuerURLValid, reason, "%s", msg)
	}
	result.Pass(authv1alpha1.ConditionIssuerURLValid, "issuer is a valid URL")

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

	if err := fetchKeySet(ctx, client, discovered.JWKSURL); err != nil {
		return fail(authv1alpha1.ConditionJWKSFetchValid, authv1alpha1.ReasonInvalidCouldNotFetchJWKS, "could not fetch keys: %v", err)
	}
	result.Pass(authv1alpha1.ConditionJWKSFetchValid, "successfully fetched jwks")

	// The key set outlives New: its context is cancelled by Close, not by ctx.
	lifecycleCtx, cancel := context.WithCancel(oidc.ClientContext(context.Background(), client))
	token, err := upstreamoidc.New(lifecycleCtx, upstreamoidc.Options{
		JWTAuthenticator:     jwtAuthenticatorConfig(cfg),
		KeySet:               oidc.NewRemoteKeySet(lifecycleCtx, discovered.JWKSURL),
		Client:               client, // for distributed claims
		SupportedSigningAlgs: SigningAlgorithms,
	})
	if err != nil {
		cancel()
		return fail(authv1alpha1.ConditionAuthenticatorValid, authv1alpha1.ReasonInvalidAuthenticator,
			"could not initialize the JWT authenticator: %v", err)
	}
	result.Pass(authv1alpha1.ConditionAuthenticatorValid, "authenticator initialized")
	return &Authenticator{token: token, cancel: cancel}, result
}

// jwtAuthenticatorConfig maps cfg to the upstream structured configuration, with empty
// username and groups prefixes so identities are exactly the claim values.
func jwtAuthenticatorConfig(cfg Config) apiserverapi.JWTAuthenticator {
	usernameClaim, groupsClaim := cfg.UsernameClaim, cfg.GroupsClaim
	if usernameClaim == "" {
		usernameClaim = DefaultUsernameClaim
	}
	if groupsClaim == "" {
		groupsClaim = DefaultGroupsClaim
	}
	var audiences []string
	if cfg.Audience != "" {
		audiences = []string{cfg.Audience}
	}
	return apiserverapi.JWTAuthenticator{
		Issuer: apiserverapi.Issuer{URL: cfg.Issuer, Audiences: audiences},
		ClaimMappings: apiserverapi.ClaimMappings{
			Username: apiserverapi.PrefixedClaimOrExpression{Claim: usernameClaim, Prefix: ptr.To("")},
			Groups:   apiserverapi.PrefixedClaimOrExpression{Claim: groupsClaim, Prefix: ptr.To("")},
		},
	}
}

// validateIssuerURL returns a reason and message when issuer is not acceptable, checked in
// upstream's order and worded as upstream words them.
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
func fetchKeySet(ctx context.Context, client *http.Client, jwksURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwksURL, nil)
	if err != nil {
		return fmt.Errorf("could not build request for jwks %q: %w", jwksURL, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("could not fetch jwks from %q: %w", jwksURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("could not read jwks from %q: %w", jwksURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching jwks from %q: status %s", jwksURL, resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return fmt.Errorf("jwks from %q is not a valid JSON Web Key Set: %w", jwksURL, err)
	}
	if len(set.Keys) == 0 {
		return fmt.Errorf("jwks from %q holds no keys", jwksURL)
	}
	return nil
}
