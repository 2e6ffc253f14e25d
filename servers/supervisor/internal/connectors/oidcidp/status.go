package oidcidp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// Type and keys of the Secret holding an OIDCIdentityProvider's client credentials.
const (
	ClientSecretType corev1.SecretType = "secrets.pinniped.dev/oidc-client"
	ClientIDKey                        = "clientID"
	ClientSecretKey                    = "clientSecret"
)

// disallowedAuthorizeParameters are set by the Supervisor on every authorization request.
var disallowedAuthorizeParameters = []string{
	"response_type", "scope", "client_id", "state", "nonce",
	"code_challenge", "code_challenge_method", "redirect_uri", "hd",
}

// Flows of an OIDCIdentityProvider: the browser, and the CLI's password flow when the upstream
// allows the password grant.
func Flows(idp *idpv1alpha1.OIDCIdentityProvider) []issuer.Flow {
	if idp.Spec.AuthorizationConfig.AllowPasswordGrant {
		return []issuer.Flow{issuer.FlowBrowserAuthcode, issuer.FlowCLIPassword}
	}
	return connectors.BrowserFlows
}

// httpTimeout bounds every request to the upstream.
const httpTimeout = 90 * time.Second

// Open checks an OIDCIdentityProvider with its client Secret and CA bundle, and reads the
// issuer's discovery document, unless it did so for the same issuer and CA bundle less than
// connectors.ProbeTTL ago. An issuer that cannot be reached after a successful read keeps the
// connector, with the discovery document read then (see connectors.Factory).
func Open(ctx context.Context, idp *idpv1alpha1.OIDCIdentityProvider, in connectors.Inputs) (connectors.Connector, []metav1.Condition, error) {
	return open(ctx, idp, in, discover)
}

// open is Open with the discovery as a parameter, for tests.
func open(ctx context.Context, idp *idpv1alpha1.OIDCIdentityProvider, in connectors.Inputs,
	discover func(ctx context.Context, issuer string, client *http.Client) (*oidc.Provider, error),
) (connectors.Connector, []metav1.Condition, error) {
	spec := idp.Spec
	secret, err := in.Secret(spec.Client.SecretName)
	if err != nil {
		return nil, nil, err
	}
	clientID, clientSecret, secretCond := clientSecretCondition(spec.Client.SecretName, secret)
	caBundle, tlsErr := in.CABundle("spec.tls", spec.TLS)
	tlsCond := connectors.TLSCondition("spec.tls", caBundle, tlsErr)
	var d discovered
	if tlsCond.Status != metav1.ConditionTrue {
		d.cond = metav1.Condition{
			Type: idpv1alpha1.ConditionOIDCDiscoverySucceeded, Status: metav1.ConditionFalse,
			Reason: idpv1alpha1.ReasonInvalidTLSConfig, Message: tlsCond.Message,
		}
	} else {
		d = discoveryCondition(ctx, idp, caBundle, in.Probes, in.Settings, discover)
	}
	conds := connectors.WithGeneration([]metav1.Condition{
		secretCond,
		d.cond,
		authorizeParametersCondition(spec.AuthorizationConfig.AdditionalAuthorizeParameters),
		tlsCond,
	}, idp.Generation)
	// An unreachable issuer keeps the connector when nothing else is wrong (connectors.Factory).
	others := []metav1.Condition{conds[0], conds[2], conds[3]}
	if connectors.PhaseOf(conds) != idpv1alpha1.PhaseReady && (!d.unreachable || connectors.PhaseOf(others) != idpv1alpha1.PhaseReady) {
		return nil, conds, nil
	}
	return &Connector{cfg: Config{
		IssuerURL:           spec.Issuer,
		ClientID:            clientID,
		ClientSecret:        clientSecret,
		Scopes:              slices.DeleteFunc(slices.Clone(spec.AuthorizationConfig.AdditionalScopes), func(s string) bool { return s == oidc.ScopeOpenID }),
		UsernameClaim:       spec.Claims.Username,
		GroupsClaim:         spec.Claims.Groups,
		AuthorizeParameters: authorizeParameters(spec.AuthorizationConfig.AdditionalAuthorizeParameters),
		AdditionalClaims:    spec.Claims.AdditionalClaimMappings,
		HTTPClient:          d.client,
		IgnoreUserInfo:      slices.Contains(in.IgnoreUserInfoIssuers, spec.Issuer),
	}, disc: d.disc}, conds, nil
}

// discovered is the outcome of reading the discovery document: its condition, and after a
// success the HTTP client that read it and the discovery that connectors share. After a failure
// for want of a connection, unreachable is set and, when the same issuer was read before, client
// and disc are those of that success.
type discovered struct {
	cond        metav1.Condition
	client      *http.Client
	disc        *discovery
	unreachable bool
}

// discoveryCondition reads the issuer's discovery document, unless it was read for the same
// issuer and CA bundle less than connectors.ProbeTTL ago. The HTTP client and the discovery are
// kept with the result: a provider whose issuer and CA bundle did not change keeps them, whatever
// else changed in its spec.
func discoveryCondition(ctx context.Context, idp *idpv1alpha1.OIDCIdentityProvider, caBundle []byte, probes *connectors.ProbeCache, settings connectors.Settings,
	discover func(ctx context.Context, issuer string, client *http.Client) (*oidc.Provider, error),
) discovered {
	iss := idp.Spec.Issuer
	if c, ok := httpsURLCondition(iss, "issuer", idpv1alpha1.ReasonUnreachable); !ok {
		return discovered{cond: c}
	}
	cond := metav1.Condition{Type: idpv1alpha1.ConditionOIDCDiscoverySucceeded}
	fp := iss + " " + connectors.Fingerprint(0, nil, caBundle)
	return connectors.Probe(probes, fp, func(prev discovered, found bool) (discovered, bool) {
		client, disc := prev.client, prev.disc
		if !found || client == nil { // nothing found, or a success in an earlier process
			var err error
			if client, err = newHTTPClient(caBundle, settings); err != nil {
				cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, idpv1alpha1.ReasonInvalidTLSConfig, err.Error()
				return discovered{cond: cond}, false
			}
			disc = &discovery{}
		}
		p, err := discover(ctx, iss, client)
		if err != nil {
			cond.Status, cond.Reason = metav1.ConditionFalse, idpv1alpha1.ReasonUnreachable
			cond.Message = fmt.Sprintf("failed to perform OIDC discovery against %q:\n%s", iss, truncated(err))
			if found && connectors.Unreachable(err) {
				return discovered{cond: cond, client: client, disc: disc, unreachable: true}, false
			}
			return discovered{cond: cond}, false
		}
		if c, ok := endpointsCondition(iss, p); !ok {
			return discovered{cond: c}, false
		}
		disc.mu.Lock()
		disc.provider = p
		disc.mu.Unlock()
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, idpv1alpha1.ReasonSuccess, "discovered issuer configuration"
		return discovered{cond: cond, client: client, disc: disc}, true
	})
}

// endpointsCondition checks the endpoints of the discovery document of iss that the Supervisor
// calls, as upstream Pinniped does: each must be an https URL without a query or fragment.
func endpointsCondition(iss string, p *oidc.Provider) (metav1.Condition, bool) {
	var claims struct {
		RevocationEndpoint string `json:"revocation_endpoint"`
	}
	if err := p.Claims(&claims); err != nil {
		return metav1.Condition{Type: idpv1alpha1.ConditionOIDCDiscoverySucceeded, Status: metav1.ConditionFalse, Reason: idpv1alpha1.ReasonInvalidResponse,
			Message: fmt.Sprintf("failed to unmarshal OIDC discovery response from %q:\n%s", iss, truncated(err))}, false
	}
	if claims.RevocationEndpoint != "" {
		if c, ok := httpsURLCondition(claims.RevocationEndpoint, "revocation endpoint", idpv1alpha1.ReasonInvalidResponse); !ok {
			return c, false
		}
	}
	if c, ok := httpsURLCondition(p.Endpoint().AuthURL, "authorization endpoint", idpv1alpha1.ReasonInvalidResponse); !ok {
		return c, false
	}
	return httpsURLCondition(p.Endpoint().TokenURL, "token endpoint", idpv1alpha1.ReasonInvalidResponse)
}

// httpsURLCondition is a false OIDCDiscoverySucceeded, in upstream's words, when raw (the URL of
// what) is not an https URL without a query or fragment.
func httpsURLCondition(raw, what, reason string) (metav1.Condition, bool) {
	c := metav1.Condition{Type: idpv1alpha1.ConditionOIDCDiscoverySucceeded, Status: metav1.ConditionFalse, Reason: reason}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		c.Message = fmt.Sprintf("failed to parse %s URL: %s", what, truncated(err))
	case u.Scheme != "https":
		c.Message = fmt.Sprintf(`%s URL '%s' must have "https" scheme, not %q`, what, raw, u.Scheme)
	case len(u.Query()) != 0 || u.Fragment != "":
		c.Message = fmt.Sprintf("%s URL '%s' cannot contain query or fragment component", what, raw)
	default:
		return metav1.Condition{}, true
	}
	return c, false
}

// truncated is err's message cut after 300 bytes, as upstream cuts it, unless it is one of
// go-oidc or of certificate verification, which are kept whole.
func truncated(err error) string {
	const limit = 300
	msg := err.Error()
	if len(msg) <= limit || strings.Contains(msg, "oidc:") || strings.Contains(msg, "x509:") {
		return msg
	}
	return msg[:limit] + fmt.Sprintf(" [truncated %d chars]", len(msg)-limit)
}

// discover reads the issuer's discovery document, checking that it names the issuer. Network
// failures are *url.Error.
func discover(ctx context.Context, issuer string, client *http.Client) (*oidc.Provider, error) {
	return oidc.NewProvider(oidc.ClientContext(ctx, client), issuer)
}

// newHTTPClient returns a client that verifies servers with caBundle, or the system roots when
// it is empty, and connects within settings' connect timeout.
func newHTTPClient(caBundle []byte, settings connectors.Settings) (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("the CA bundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	return &http.Client{Transport: settings.HTTPTransport(tlsConfig), Timeout: httpTimeout}, nil
}

// clientSecretCondition is ClientCredentialsSecretValid, worded as upstream words it: it wants a
// Secret of type ClientSecretType (nil when it does not exist) with a client ID and secret, which
// it returns.
func clientSecretCondition(name string, s *corev1.Secret) (clientID, clientSecret string, c metav1.Condition) {
	c = metav1.Condition{Type: idpv1alpha1.ConditionClientCredentialsSecretValid, Status: metav1.ConditionFalse}
	switch {
	case s == nil:
		c.Reason, c.Message = idpv1alpha1.ReasonSecretNotFound, fmt.Sprintf("secret %q not found", name)
	case s.Type != ClientSecretType:
		c.Reason, c.Message = idpv1alpha1.ReasonSecretWrongType,
			fmt.Sprintf("referenced Secret %q has wrong type %q (should be %q)", name, s.Type, ClientSecretType)
	case len(s.Data[ClientIDKey]) == 0 || len(s.Data[ClientSecretKey]) == 0:
		c.Reason, c.Message = idpv1alpha1.ReasonSecretMissingKeys,
			fmt.Sprintf("referenced Secret %q is missing required keys %q", name, []string{ClientIDKey, ClientSecretKey})
	default:
		c.Status, c.Reason = metav1.ConditionTrue, idpv1alpha1.ReasonSuccess
		c.Message = "loaded client credentials"
		return string(s.Data[ClientIDKey]), string(s.Data[ClientSecretKey]), c
	}
	return "", "", c
}

// authorizeParametersCondition is AdditionalAuthorizeParametersValid: no parameter may replace
// one the Supervisor sets. Its texts are upstream's, which lists every offending name.
func authorizeParametersCondition(params []idpv1alpha1.Parameter) metav1.Condition {
	var bad []string
	for _, p := range params {
		if slices.Contains(disallowedAuthorizeParameters, p.Name) {
			bad = append(bad, p.Name)
		}
	}
	if len(bad) > 0 {
		return metav1.Condition{
			Type: idpv1alpha1.ConditionAdditionalAuthorizeParametersValid, Status: metav1.ConditionFalse,
			Reason:  idpv1alpha1.ReasonDisallowedParameterName,
			Message: "the following additionalAuthorizeParameters are not allowed: " + strings.Join(bad, ","),
		}
	}
	return metav1.Condition{
		Type: idpv1alpha1.ConditionAdditionalAuthorizeParametersValid, Status: metav1.ConditionTrue,
		Reason: idpv1alpha1.ReasonSuccess, Message: "additionalAuthorizeParameters parameter names are allowed",
	}
}

// authorizeParameters are the additional authorize parameters by name, or nil.
func authorizeParameters(params []idpv1alpha1.Parameter) map[string]string {
	if len(params) == 0 {
		return nil
	}
	m := make(map[string]string, len(params))
	for _, p := range params {
		m[p.Name] = p.Value
	}
	return m
}
