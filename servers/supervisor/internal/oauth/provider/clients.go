package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ory/fosite"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	configlisters "sealion.dev/core/generated/supervisor/listers/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/clientcheck"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
)

// OIDCClients finds the confidential clients registered as OIDCClients in the Supervisor's
// namespace, from informer caches. A client is usable only while clientcheck.Validate finds it
// Ready: its spec is consistent and it has valid secrets. It is checked at every lookup rather
// than read from the status, which may lag behind a change.
type OIDCClients struct {
	// Clients lists the OIDCClients of the Supervisor's namespace.
	Clients configlisters.OIDCClientNamespaceLister
	// Secrets lists the Secrets of the Supervisor's namespace, where the client secrets are.
	Secrets corev1listers.SecretNamespaceLister
	// MinBcryptCost is the lowest bcrypt cost of an acceptable stored hash.
	MinBcryptCost int
}

// clients are the clients of an issuer: pinniped-cli and, when oidcClients is set, the Ready
// OIDCClients.
type clients struct {
	cli         fosite.Client
	oidcClients *OIDCClients
	// deviceCallback is the issuer's DeviceCallbackPath, a redirect URI of every client allowed
	// the device grant: the verification page starts the login for the client.
	deviceCallback string
}

var _ fosite.ClientManager = (*clients)(nil)

// GetClient finds a client at every use, so that a stored request is refused once its
// OIDCClient was deleted or became unusable.
func (c *clients) GetClient(_ context.Context, id string) (fosite.Client, error) {
	switch {
	case id == PinnipedCLIClientID:
		return c.cli, nil
	case strings.HasPrefix(id, configv1alpha1.OIDCClientNamePrefix) && c.oidcClients != nil:
		return c.oidcClients.client(id, c.deviceCallback)
	}
	return nil, fosite.ErrNotFound.WithHintf("unknown client %q", id)
}

// ClientAssertionJWTValid and SetClientAssertionJWT belong to private_key_jwt client
// authentication, which no client of the Supervisor uses.
func (c *clients) ClientAssertionJWTValid(context.Context, string) error {
	return fosite.ErrInvalidClient.WithHint("client assertions are not supported")
}

func (c *clients) SetClientAssertionJWT(context.Context, string, time.Time) error {
	return fosite.ErrInvalidClient.WithHint("client assertions are not supported")
}

// tokenEndpointAuthMethod is how OIDCClients authenticate at the token endpoint: Pinniped accepts
// only HTTP basic authentication (client_secret_basic) from them.
const tokenEndpointAuthMethod = "client_secret_basic"

// client returns the OIDCClient named id as a fosite client, or an error saying why it cannot
// be used.
func (o *OIDCClients) client(id, deviceCallback string) (fosite.Client, error) {
	c, err := o.Clients.Get(id)
	if apierrors.IsNotFound(err) {
		return nil, fosite.ErrNotFound.WithHintf("unknown client %q", id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading OIDCClient %s: %w", id, err)
	}
	storage, err := o.Secrets.Get(clientsecrets.SecretName(c.UID))
	if apierrors.IsNotFound(err) {
		storage = nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the client secrets of OIDCClient %s: %w", id, err)
	}
	res := clientcheck.Validate(c, storage, o.MinBcryptCost)
	if res.Phase != configv1alpha1.PhaseReady {
		var problems []string
		for _, cond := range res.Conditions {
			if cond.Status != metav1.ConditionTrue {
				problems = append(problems, cond.Message)
			}
		}
		return nil, fosite.ErrNotFound.WithHintf("client %q is not ready: %s", id, strings.Join(problems, "; "))
	}
	return newConfidentialClient(c, res.Hashes, deviceCallback), nil
}

// confidentialClient is an OIDCClient as fosite sees it. Its ID token lifetime may differ from
// the default for the authorization code and refresh grants.
type confidentialClient struct {
	oidcClient
	idTokenLifetime time.Duration // 0 for the default
	// sessionLifetimes shortens the issuer's session policy for this client; nil when unset.
	sessionLifetimes *configv1alpha1.SessionLifetimes
	// postLogoutRedirectURIs are where the end-session endpoint may send the browser back to.
	postLogoutRedirectURIs []string
}

var (
	_ fosite.OpenIDConnectClient            = (*confidentialClient)(nil)
	_ fosite.ClientWithSecretRotation       = (*confidentialClient)(nil)
	_ fosite.ClientWithCustomTokenLifespans = (*confidentialClient)(nil)
)

// newConfidentialClient requires at least one hash; the newest is tried first. A client allowed
// the device grant may also redirect to deviceCallback.
func newConfidentialClient(c *configv1alpha1.OIDCClient, hashes []string, deviceCallback string) *confidentialClient {
	bytes := make([][]byte, len(hashes))
	for i, h := range hashes {
		bytes[i] = []byte(h)
	}
	spec := c.Spec
	redirects := stringsOf(spec.AllowedRedirectURIs)
	if slices.Contains(spec.AllowedGrantTypes, configv1alpha1.GrantTypeDeviceCode) {
		redirects = append(redirects, deviceCallback)
	}
	client := &confidentialClient{oidcClient: oidcClient{&fosite.DefaultOpenIDConnectClient{
		DefaultClient: &fosite.DefaultClient{
			ID:             c.Name,
			Secret:         bytes[0],
			RotatedSecrets: bytes[1:],
			RedirectURIs:   redirects,
			GrantTypes:     stringsOf(spec.AllowedGrantTypes),
			ResponseTypes:  []string{"code"},
			Scopes:         stringsOf(spec.AllowedScopes),
		},
		TokenEndpointAuthMethod: tokenEndpointAuthMethod,
	}}}
	if s := spec.TokenLifetimes.IDTokenSeconds; s != nil {
		client.idTokenLifetime = time.Duration(*s) * time.Second
	}
	client.sessionLifetimes = spec.SessionLifetimes
	client.postLogoutRedirectURIs = stringsOf(spec.AllowedPostLogoutRedirectURIs)
	return client
}

func (c *confidentialClient) GetEffectiveLifespan(gt fosite.GrantType, tt fosite.TokenType, fallback time.Duration) time.Duration {
	if tt == fosite.IDToken && c.idTokenLifetime > 0 && (gt == fosite.GrantTypeAuthorizationCode || gt == fosite.GrantTypeRefreshToken) {
		return c.idTokenLifetime
	}
	return fallback
}

func stringsOf[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}
