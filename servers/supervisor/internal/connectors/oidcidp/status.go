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
			Type: idpv1alpha1.ConditionOIDCDiscoverySucceeded, Status: metav1.ConditionUnknown,
			Reason: idpv1alpha1.ReasonUnableToValidate, Message: "not attempted: spec.tls is invalid",
		}
	} else {
		d = discoveryCondition(ctx, idp, caBundle, in.Probes, discover)
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
func discoveryCondition(ctx context.Context, idp *idpv1alpha1.OIDCIdentityProvider, caBundle []byte, probes *connectors.ProbeCache,
	discover func(ctx context.Context, issuer string, client *http.Client) (*oidc.Provider, error),
) discovered {
	iss := idp.Spec.Issuer
	cond := metav1.Condition{Type: idpv1alpha1.ConditionOIDCDiscoverySucceeded}
	if u, err := url.Parse(iss); err != nil || u.Scheme != "https" || u.Host == "" {
		cond.Status, cond.Reason = metav1.ConditionFalse, idpv1alpha1.ReasonInvalid
		cond.Message = fmt.Sprintf("spec.issuer (%q) is not an https URL", iss)
		return discovered{cond: cond}
	}
	fp := iss + " " + connectors.Fingerprint(0, nil, caBundle)
	return connectors.Probe(probes, fp, func(prev discovered, found bool) (discovered, bool) {
		client, disc := prev.client, prev.disc
		if !found {
			var err error
			if client, err = newHTTPClient(caBundle); err != nil {
				cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, idpv1alpha1.ReasonInvalidTLSConfig, err.Error()
				return discovered{cond: cond}, false
			}
			disc = &discovery{}
		}
		p, err := discover(ctx, iss, client)
		if err != nil {
			var urlErr *url.Error
			cond.Status, cond.Reason = metav1.ConditionFalse, idpv1alpha1.ReasonInvalidResponse
			if errors.As(err, &urlErr) {
				cond.Reason = idpv1alpha1.ReasonUnreachable
			}
			cond.Message = fmt.Sprintf("discovering %s: %v", iss, err)
			if found && connectors.Unreachable(err) {
				return discovered{cond: cond, client: client, disc: disc, unreachable: true}, false
			}
			return discovered{cond: cond}, false
		}
		disc.mu.Lock()
		disc.provider = p
		disc.mu.Unlock()
		cond.Status, cond.Reason = metav1.ConditionTrue, idpv1alpha1.ReasonSuccess
		cond.Message = fmt.Sprintf("read the discovery document of %s", iss)
		return discovered{cond: cond, client: client, disc: disc}, true
	})
}

// discover reads the issuer's discovery document (checking that it names the issuer) and checks
// that it has the endpoints a login needs. Network failures are *url.Error.
func discover(ctx context.Context, issuer string, client *http.Client) (*oidc.Provider, error) {
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, client), issuer)
	if err != nil {
		return nil, err
	}
	if e := p.Endpoint(); e.AuthURL == "" || e.TokenURL == "" {
		return nil, errors.New("the discovery document lacks authorization_endpoint or token_endpoint")
	}
	return p, nil
}

// newHTTPClient returns a client that verifies servers with caBundle, or the system roots when
// it is empty.
func newHTTPClient(caBundle []byte) (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("the CA bundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	return &http.Client{Transport: transport, Timeout: httpTimeout}, nil
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
// one the Supervisor sets.
func authorizeParametersCondition(params []idpv1alpha1.Parameter) metav1.Condition {
	var bad []string
	for _, p := range params {
		if slices.Contains(disallowedAuthorizeParameters, p.Name) && !slices.Contains(bad, p.Name) {
			bad = append(bad, p.Name)
		}
	}
	if len(bad) > 0 {
		return metav1.Condition{
			Type: idpv1alpha1.ConditionAdditionalAuthorizeParametersValid, Status: metav1.ConditionFalse,
			Reason:  idpv1alpha1.ReasonDisallowedParameterName,
			Message: fmt.Sprintf("spec.authorizationConfig.additionalAuthorizeParameters may not set %s, which the Supervisor sets", strings.Join(bad, ", ")),
		}
	}
	return metav1.Condition{
		Type: idpv1alpha1.ConditionAdditionalAuthorizeParametersValid, Status: metav1.ConditionTrue,
		Reason: idpv1alpha1.ReasonSuccess, Message: "no additional authorize parameter replaces one the Supervisor sets",
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
