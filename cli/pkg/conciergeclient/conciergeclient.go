// Package conciergeclient exchanges an external credential (a JWT or a webhook token) for a
// short-lived cluster credential by creating a TokenCredentialRequest at the Concierge.
//
// The request is anonymous: the caller has no cluster credential yet. It goes either to the
// cluster's API server, which forwards it to the Concierge through API aggregation, or to the
// Concierge's impersonation proxy; both serve the same API path.
package conciergeclient

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	loginclient "sealion.dev/core/generated/concierge/clientset/versioned/typed/login/v1alpha1"
	"sealion.dev/core/groupsuffix"
	"sealion.dev/core/tracing"
)

// Authenticator kinds a TokenCredentialRequest can name.
const (
	KindJWTAuthenticator     = "JWTAuthenticator"
	KindWebhookAuthenticator = "WebhookAuthenticator"
)

// Config says where the Concierge is and which authenticator checks the token.
type Config struct {
	// Endpoint is the https URL of the cluster's API server or of the impersonation proxy.
	Endpoint string
	// CABundle is the PEM bundle that verifies the endpoint's serving certificate.
	CABundle []byte
	// APIGroupSuffix is the Concierge's API group suffix; empty means pinniped.dev.
	APIGroupSuffix string
	// AuthenticatorKind is KindJWTAuthenticator or KindWebhookAuthenticator.
	AuthenticatorKind string
	// AuthenticatorName names the authenticator object.
	AuthenticatorName string
}

// AuthenticatorKind maps the CLI's authenticator type ("jwt" or "webhook") to its kind.
func AuthenticatorKind(cliType string) (string, error) {
	switch cliType {
	case "jwt":
		return KindJWTAuthenticator, nil
	case "webhook":
		return KindWebhookAuthenticator, nil
	}
	return "", fmt.Errorf("invalid authenticator type %q: must be \"jwt\" or \"webhook\"", cliType)
}

// DecodeCABundle decodes base64 PEM data as the CLI flags carry it.
func DecodeCABundle(b64 string) ([]byte, error) {
	if b64 == "" {
		return nil, nil
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("decoding the CA bundle: %w", err)
	}
	return data, nil
}

// Client creates TokenCredentialRequests at one Concierge.
type Client struct {
	cfg   Config
	login loginclient.LoginV1alpha1Interface
}

// New validates cfg and builds an anonymous client for it.
func New(cfg Config) (*Client, error) {
	if cfg.APIGroupSuffix == "" {
		cfg.APIGroupSuffix = groupsuffix.Default
	}
	if err := groupsuffix.Validate(cfg.APIGroupSuffix); err != nil {
		return nil, fmt.Errorf("invalid API group suffix: %w", err)
	}
	if cfg.AuthenticatorKind != KindJWTAuthenticator && cfg.AuthenticatorKind != KindWebhookAuthenticator {
		return nil, fmt.Errorf("invalid authenticator kind %q", cfg.AuthenticatorKind)
	}
	if cfg.AuthenticatorName == "" {
		return nil, errors.New("an authenticator name is required")
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("invalid Concierge endpoint %q: must be an https URL", cfg.Endpoint)
	}
	restCfg := &rest.Config{
		Host:            cfg.Endpoint,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CABundle},
		UserAgent:       "pinniped",
	}
	restCfg.Wrap(groupsuffix.Transport(cfg.APIGroupSuffix))
	restCfg.Wrap(tracing.Transport)
	// The login group's typed client, not the clientset: the clientset's discovery client links
	// client-go's scheme of every built-in API, whose initialisation every kubectl call would pay.
	login, err := loginclient.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("building a client for %s: %w", cfg.Endpoint, err)
	}
	return &Client{cfg: cfg, login: login}, nil
}

// ExchangeToken asks the Concierge to exchange token for a cluster credential. A refusal is an
// error carrying the server's message.
func (c *Client) ExchangeToken(ctx context.Context, token string) (*loginv1alpha1.ClusterCredential, error) {
	req := &loginv1alpha1.TokenCredentialRequest{Spec: loginv1alpha1.TokenCredentialRequestSpec{
		Token: token,
		Authenticator: corev1.TypedLocalObjectReference{
			APIGroup: ptr.To(authv1alpha1.GroupName), // renamed to the custom suffix by the transport
			Kind:     c.cfg.AuthenticatorKind,
			Name:     c.cfg.AuthenticatorName,
		},
	}}
	resp, err := c.login.TokenCredentialRequests().Create(ctx, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("could not create a TokenCredentialRequest at %s: %w", c.cfg.Endpoint, err)
	}
	if resp.Status.Message != nil {
		return nil, fmt.Errorf("the Concierge refused the token: %s", *resp.Status.Message)
	}
	if resp.Status.Credential == nil {
		return nil, errors.New("the Concierge returned neither a credential nor a message")
	}
	return resp.Status.Credential, nil
}
