package upstreamidp

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

	"github.com/coreos/go-oidc/v3/oidc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/oidcprovider"
	"sealion.dev/servers/supervisor/internal/upstreamldap"
)

// Type and keys of the Secret holding an OIDCIdentityProvider's client credentials.
const (
	OIDCClientSecretType corev1.SecretType = "secrets.pinniped.dev/oidc-client"
	OIDCClientIDKey                        = "clientID"
	OIDCClientSecretKey                    = "clientSecret"
)

// disallowedAuthorizeParameters are set by the Supervisor on every authorization request.
var disallowedAuthorizeParameters = []string{
	"response_type", "scope", "client_id", "state", "nonce",
	"code_challenge", "code_challenge_method", "redirect_uri", "hd",
}

// syncOIDC validates every OIDCIdentityProvider and publishes the Ready ones.
func (c *Controller) syncOIDC(ctx context.Context) error {
	idps, err := c.oidc.List(labels.Everything())
	if err != nil {
		return err
	}
	usable := map[string]*oidcprovider.Upstream{}
	seen := map[types.UID]bool{}
	var errs []error
	for _, idp := range idps {
		seen[idp.UID] = true
		upstream, conds, err := c.validateOIDC(ctx, idp)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if upstream != nil {
			usable[idp.Name] = upstream
		}
		errs = append(errs, writeStatus(ctx, "OIDCIdentityProvider", idp.Name, idp.Status, conds,
			func(s idpv1alpha1.IdentityProviderStatus) *idpv1alpha1.OIDCIdentityProvider {
				u := idp.DeepCopy()
				u.Status = s
				return u
			},
			c.supervisor.IdpV1alpha1().OIDCIdentityProviders(c.namespace).UpdateStatus))
	}
	c.oidcProbes.retain(seen)
	c.registry.SetOIDC(c.namespace, usable)
	return errors.Join(errs...)
}

// validateOIDC returns the conditions of idp, and its Upstream when they are all true.
func (c *Controller) validateOIDC(ctx context.Context, idp *idpv1alpha1.OIDCIdentityProvider) (*oidcprovider.Upstream, []metav1.Condition, error) {
	spec, gen := idp.Spec, idp.Generation
	secret, err := c.secret(spec.Client.SecretName)
	if err != nil {
		return nil, nil, err
	}
	clientID, clientSecret, secretCond := oidcClientSecretCondition(spec.Client.SecretName, secret)
	caBundle, tlsErr := c.caBundle(spec.TLS)
	tlsCond := upstreamldap.TLSCondition(caBundle, tlsErr)
	discoveryCond := metav1.Condition{Type: idpv1alpha1.ConditionOIDCDiscoverySucceeded}
	var client *http.Client
	if tlsCond.Status != metav1.ConditionTrue {
		discoveryCond.Status, discoveryCond.Reason = metav1.ConditionUnknown, idpv1alpha1.ReasonUnableToValidate
		discoveryCond.Message = "not attempted: spec.tls is invalid"
	} else {
		client, discoveryCond = c.discoveryCondition(ctx, idp, caBundle)
	}
	conds := []metav1.Condition{
		secretCond,
		discoveryCond,
		authorizeParametersCondition(spec.AuthorizationConfig.AdditionalAuthorizeParameters),
		tlsCond,
	}
	for i := range conds {
		conds[i].ObservedGeneration = gen
	}
	if !allTrue(conds) {
		return nil, conds, nil
	}
	return &oidcprovider.Upstream{
		IssuerURL:           spec.Issuer,
		ClientID:            clientID,
		ClientSecret:        clientSecret,
		Scopes:              slices.DeleteFunc(slices.Clone(spec.AuthorizationConfig.AdditionalScopes), func(s string) bool { return s == oidc.ScopeOpenID }),
		UsernameClaim:       spec.Claims.Username,
		GroupsClaim:         spec.Claims.Groups,
		AuthorizeParameters: authorizeParameters(spec.AuthorizationConfig.AdditionalAuthorizeParameters),
		AdditionalClaims:    spec.Claims.AdditionalClaimMappings,
		HTTPClient:          client,
	}, conds, nil
}

// discoveryCondition reads the issuer's discovery document, unless it was read for the same
// issuer and CA bundle less than probeTTL ago. The HTTP client is kept with the result: the
// endpoints cache discovery per issuer and client, so a provider whose issuer and CA bundle did
// not change keeps the same one, whatever else changed in its spec.
func (c *Controller) discoveryCondition(ctx context.Context, idp *idpv1alpha1.OIDCIdentityProvider, caBundle []byte) (*http.Client, metav1.Condition) {
	cond := metav1.Condition{Type: idpv1alpha1.ConditionOIDCDiscoverySucceeded}
	if u, err := url.Parse(idp.Spec.Issuer); err != nil || u.Scheme != "https" || u.Host == "" {
		cond.Status, cond.Reason = metav1.ConditionFalse, idpv1alpha1.ReasonInvalid
		cond.Message = fmt.Sprintf("spec.issuer (%q) is not an https URL", idp.Spec.Issuer)
		return nil, cond
	}
	fp := idp.Spec.Issuer + " " + fingerprint(0, nil, caBundle)
	now := c.now()
	client, fresh, found := c.oidcProbes.get(idp.UID, fp, now)
	if !found {
		var err error
		if client, err = newHTTPClient(caBundle); err != nil {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, idpv1alpha1.ReasonInvalidTLSConfig, err.Error()
			return nil, cond
		}
	}
	if !fresh {
		probeCtx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := c.probes.oidc(probeCtx, idp.Spec.Issuer, client)
		cancel()
		if err != nil {
			var urlErr *url.Error
			cond.Status, cond.Reason = metav1.ConditionFalse, idpv1alpha1.ReasonInvalidResponse
			if errors.As(err, &urlErr) {
				cond.Reason = idpv1alpha1.ReasonUnreachable
			}
			cond.Message = fmt.Sprintf("discovering %s: %v", idp.Spec.Issuer, err)
			return nil, cond
		}
		c.oidcProbes.put(idp.UID, fp, now, client)
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, idpv1alpha1.ReasonSuccess
	cond.Message = fmt.Sprintf("read the discovery document of %s", idp.Spec.Issuer)
	return client, cond
}

// discover reads the issuer's discovery document (checking that it names the issuer) and checks
// that it has the endpoints a login needs. Network failures are *url.Error.
func discover(ctx context.Context, issuer string, client *http.Client) error {
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, client), issuer)
	if err != nil {
		return err
	}
	if e := p.Endpoint(); e.AuthURL == "" || e.TokenURL == "" {
		return errors.New("the discovery document lacks authorization_endpoint or token_endpoint")
	}
	return nil
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
	return &http.Client{Transport: transport, Timeout: probeTimeout}, nil
}

// oidcClientSecretCondition is ClientCredentialsSecretValid: it wants a Secret of type
// OIDCClientSecretType (nil when it does not exist) with a client ID and secret, which it
// returns.
func oidcClientSecretCondition(name string, s *corev1.Secret) (clientID, clientSecret string, c metav1.Condition) {
	c = metav1.Condition{Type: idpv1alpha1.ConditionClientCredentialsSecretValid, Status: metav1.ConditionFalse}
	switch {
	case s == nil:
		c.Reason, c.Message = idpv1alpha1.ReasonSecretNotFound, fmt.Sprintf("Secret %q not found", name)
	case s.Type != OIDCClientSecretType:
		c.Reason, c.Message = idpv1alpha1.ReasonSecretWrongType,
			fmt.Sprintf("Secret %q has type %q, want %q", name, s.Type, OIDCClientSecretType)
	case len(s.Data[OIDCClientIDKey]) == 0 || len(s.Data[OIDCClientSecretKey]) == 0:
		c.Reason, c.Message = idpv1alpha1.ReasonSecretMissingKeys,
			fmt.Sprintf("Secret %q needs non-empty keys %q and %q", name, OIDCClientIDKey, OIDCClientSecretKey)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, idpv1alpha1.ReasonSuccess
		c.Message = fmt.Sprintf("loaded the client ID and secret from Secret %q", name)
		return string(s.Data[OIDCClientIDKey]), string(s.Data[OIDCClientSecretKey]), c
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
