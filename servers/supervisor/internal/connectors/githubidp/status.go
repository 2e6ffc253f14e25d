package githubidp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/cabundle"
	"sealion.dev/servers/supervisor/internal/connectors"
)

// The status of a GitHubIdentityProvider comes in two steps, so that no network call hides in
// the first: Prepare checks what Open read (the client Secret, the resolved spec.githubAPI.tls)
// and the spec, and says which address to dial; Open dials it with TLS, and ConnectionCondition
// turns the result into GitHubConnectionValid.

// Keys and type of the client credentials Secret.
const (
	ClientSecretType corev1.SecretType = "secrets.pinniped.dev/github-client"
	ClientIDKey                        = "clientID"
	ClientSecretKey                    = "clientSecret"
)

// ReasonInvalidHost is the reason of a false HostValid condition.
const ReasonInvalidHost = "InvalidHost"

// Prepare returns the first five conditions of a GitHubIdentityProvider (client Secret, claims,
// organizations policy, host, TLS), the address to dial for GitHubConnectionValid, and the
// Provider when every condition is true. clientSecret is nil when the Secret does not exist;
// caBundle or tlsErr (typically a *cabundle.Error) are the outcome of resolving
// spec.githubAPI.tls. When the host or TLS is invalid there is nothing to dial: the address is
// empty and the sixth condition, GitHubConnectionValid Unknown, is included.
func Prepare(namespace string, spec idpv1alpha1.GitHubIdentityProviderSpec, generation int64, clientSecret *corev1.Secret, caBundle []byte, tlsErr error, settings connectors.Settings) (p *Provider, dialAddress string, conds []metav1.Condition) {
	cfg := ConfigFromSpec(spec)
	var secretCond metav1.Condition
	cfg.ClientID, cfg.ClientSecret, secretCond = checkClientSecret(namespace, spec.Client.SecretName, clientSecret)
	address, err := apiAddress(cfg.Host)
	hostCond := check(idpv1alpha1.ConditionHostValid, ReasonInvalidHost, fmt.Sprintf("spec.githubAPI.host (%q) is valid", cfg.Host), err)
	var tlsCond metav1.Condition
	cfg.HTTPClient, tlsCond = tlsCondition(caBundle, tlsErr, settings)
	conds = []metav1.Condition{
		secretCond,
		check(idpv1alpha1.ConditionClaimsValid, idpv1alpha1.ReasonInvalid, "spec.claims are valid",
			ValidateClaims(cfg.UsernameAttribute, cfg.GroupNameAttribute)),
		check(idpv1alpha1.ConditionOrganizationsPolicyValid, idpv1alpha1.ReasonInvalid,
			fmt.Sprintf("spec.allowAuthentication.organizations.policy (%q) is valid", cfg.Policy),
			ValidatePolicy(cfg.Policy, cfg.AllowedOrganizations)),
		hostCond,
		tlsCond,
	}
	if hostCond.Status != metav1.ConditionTrue || tlsCond.Status != metav1.ConditionTrue {
		conds = append(conds, metav1.Condition{
			Type: idpv1alpha1.ConditionGitHubConnectionValid, Status: metav1.ConditionUnknown,
			Reason: idpv1alpha1.ReasonUnableToValidate, Message: "unable to validate; see other conditions for details",
		})
		return nil, "", connectors.WithGeneration(conds, generation)
	}
	for _, c := range conds {
		if c.Status != metav1.ConditionTrue {
			return nil, address, connectors.WithGeneration(conds, generation)
		}
	}
	// The conditions checked all that New checks.
	return newProvider(cfg), address, connectors.WithGeneration(conds, generation)
}

// ConnectionCondition is GitHubConnectionValid after a TLS dial of address, the API address of
// spec.githubAPI.host host, returned err; worded as upstream words it.
func ConnectionCondition(address, host string, generation int64, err error) metav1.Condition {
	c := metav1.Condition{Type: idpv1alpha1.ConditionGitHubConnectionValid, ObservedGeneration: generation}
	if err != nil {
		c.Status, c.Reason = metav1.ConditionFalse, idpv1alpha1.ReasonUnableToDialServer
		c.Message = fmt.Sprintf("cannot dial %q for spec.githubAPI.host (%q): %v", address, host, err)
		return c
	}
	c.Status, c.Reason = metav1.ConditionTrue, idpv1alpha1.ReasonSuccess
	c.Message = fmt.Sprintf("dialed %q for spec.githubAPI.host (%q): host is reachable and TLS verification succeeds", address, host)
	return c
}

// ConfigFromSpec applies the API's defaults to a spec; the client credentials and HTTP client
// are left for the caller.
func ConfigFromSpec(spec idpv1alpha1.GitHubIdentityProviderSpec) Config {
	cfg := Config{
		Host:                 DefaultHost,
		UsernameAttribute:    idpv1alpha1.GitHubUsernameLoginAndID,
		GroupNameAttribute:   idpv1alpha1.GitHubGroupNameSlug,
		Policy:               idpv1alpha1.GitHubAllowedAuthOrganizationsPolicyOnlyUsersFromAllowedOrganizations,
		AllowedOrganizations: spec.AllowAuthentication.Organizations.Allowed,
	}
	if h := spec.GitHubAPI.Host; h != nil {
		cfg.Host = *h
	}
	if u := spec.Claims.Username; u != nil {
		cfg.UsernameAttribute = *u
	}
	if g := spec.Claims.Groups; g != nil {
		cfg.GroupNameAttribute = *g
	}
	if p := spec.AllowAuthentication.Organizations.Policy; p != nil {
		cfg.Policy = *p
	}
	return cfg
}

// checkClientSecret wants a secrets.pinniped.dev/github-client Secret in namespace with exactly the
// keys clientID and clientSecret. As upstream, every way of failing has the reason SecretNotFound and
// a message that says what is wanted.
func checkClientSecret(namespace, name string, s *corev1.Secret) (clientID, clientSecret string, c metav1.Condition) {
	c = metav1.Condition{Type: idpv1alpha1.ConditionClientCredentialsSecretValid, Status: metav1.ConditionFalse, Reason: idpv1alpha1.ReasonSecretNotFound}
	var problem string
	switch {
	case s == nil:
		problem = fmt.Sprintf("secret %q not found", name)
	case s.Type != ClientSecretType:
		problem = fmt.Sprintf("wrong secret type %q", s.Type)
	case len(s.Data[ClientIDKey]) == 0:
		problem = fmt.Sprintf("missing key %q", ClientIDKey)
	case len(s.Data[ClientSecretKey]) == 0:
		problem = fmt.Sprintf("missing key %q", ClientSecretKey)
	case len(s.Data) != 2:
		problem = "extra keys found"
	default:
		c.Status, c.Reason = metav1.ConditionTrue, idpv1alpha1.ReasonSuccess
		c.Message = fmt.Sprintf("clientID and clientSecret have been read from spec.client.SecretName (%q)", name)
		return string(s.Data[ClientIDKey]), string(s.Data[ClientSecretKey]), c
	}
	c.Message = fmt.Sprintf("%s: secret from spec.client.SecretName (%q) must be found in namespace %q with type %q and keys %q and %q",
		problem, name, namespace, ClientSecretType, ClientIDKey, ClientSecretKey)
	return "", "", c
}

// tlsCondition is TLSConfigurationValid, and the HTTP client trusting the bundle, made with settings.
func tlsCondition(caBundle []byte, err error, settings connectors.Settings) (*http.Client, metav1.Condition) {
	c := metav1.Condition{Type: idpv1alpha1.ConditionTLSConfigurationValid, Status: metav1.ConditionTrue, Reason: idpv1alpha1.ReasonSuccess}
	var client *http.Client
	if err == nil {
		client, err = NewHTTPClient(caBundle, settings)
	}
	var cbErr *cabundle.Error
	switch {
	case errors.As(err, &cbErr):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, cbErr.Reason, cbErr.Message
	case err != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, idpv1alpha1.ReasonInvalidTLSConfig, err.Error()
	default:
		c.Message = cabundle.ValidMessage("spec.githubAPI.tls", caBundle)
	}
	return client, c
}

// check is a condition that is true with okMessage when err is nil.
func check(condType, falseReason, okMessage string, err error) metav1.Condition {
	if err != nil {
		return metav1.Condition{Type: condType, Status: metav1.ConditionFalse, Reason: falseReason, Message: strings.TrimPrefix(err.Error(), "github: ")}
	}
	return metav1.Condition{Type: condType, Status: metav1.ConditionTrue, Reason: idpv1alpha1.ReasonSuccess, Message: okMessage}
}

// CheckConnection dials address with TLS, verifying the server with caBundle (the system roots
// when empty), within settings' connect timeout, for ConnectionCondition.
func CheckConnection(ctx context.Context, address string, caBundle []byte, settings connectors.Settings) error {
	tlsConfig, err := clientTLS(caBundle)
	if err != nil {
		return err
	}
	// The net dialer's timeout bounds the TLS handshake too.
	dialer := &tls.Dialer{NetDialer: settings.Dialer(), Config: tlsConfig}
	conn, err := dialer.DialContext(ctx, "tcp", address)
	if err != nil {
		return err
	}
	return conn.Close()
}
