package githubidp

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// Flows of a GitHubIdentityProvider: GitHub's web flow in a browser.
func Flows(*idpv1alpha1.GitHubIdentityProvider) []issuer.Flow { return connectors.BrowserFlows }

// Open checks a GitHubIdentityProvider with its client Secret and CA bundle, and dials the API
// host with TLS, unless it did so successfully for the same host and CA bundle less than
// connectors.ProbeTTL ago. A host that cannot be reached after a successful dial of the same
// inputs keeps the connector (see connectors.Factory).
func Open(ctx context.Context, idp *idpv1alpha1.GitHubIdentityProvider, in connectors.Inputs) (connectors.Connector, []metav1.Condition, error) {
	return open(ctx, idp, in, CheckConnection)
}

// open is Open with the dial as a parameter, for tests.
func open(ctx context.Context, idp *idpv1alpha1.GitHubIdentityProvider, in connectors.Inputs,
	dial func(ctx context.Context, address string, caBundle []byte, settings connectors.Settings) error,
) (connectors.Connector, []metav1.Condition, error) {
	secret, err := in.Secret(idp.Spec.Client.SecretName)
	if err != nil {
		return nil, nil, err
	}
	caBundle, tlsErr := in.CABundle("spec.githubAPI.tls", idp.Spec.GitHubAPI.TLS)
	p, address, conds := Prepare(idp.Namespace, idp.Spec, idp.Generation, secret, caBundle, tlsErr, in.Settings)
	if address == "" {
		return nil, conds, nil // GitHubConnectionValid is already in conds, Unknown
	}
	// The dial depends on the host (in the spec) and the CA bundle only.
	r := connectors.Probe(in.Probes, connectors.Fingerprint(idp.Generation, nil, caBundle), func(_ dialed, found bool) (dialed, bool) {
		err := dial(ctx, address, caBundle, in.Settings)
		return dialed{ConnectionCondition(address, ConfigFromSpec(idp.Spec).Host, idp.Generation, err), err != nil && found && connectors.Unreachable(err)}, err == nil
	})
	conds = append(conds, r.cond)
	// Prepare returns a Provider only when all its conditions are true.
	if p == nil || (r.cond.Status != metav1.ConditionTrue && !r.unreachable) {
		return nil, conds, nil
	}
	return NewConnector(p), conds, nil
}

// dialed is a dial of the API host: its GitHubConnectionValid condition, and whether it failed
// only for want of a connection, after a successful dial of the same inputs.
type dialed struct {
	cond        metav1.Condition
	unreachable bool
}

// Connector logs users in with GitHub's web flow and reads them again at refresh.
type Connector struct {
	provider *Provider
}

var (
	_ connectors.BrowserConnector = (*Connector)(nil)
	_ connectors.RefreshConnector = (*Connector)(nil)
)

// NewConnector is the connector of provider.
func NewConnector(provider *Provider) *Connector { return &Connector{provider: provider} }

// AuthorizeURL sends the browser to GitHub; GitHub has no use for a nonce or PKCE.
func (c *Connector) AuthorizeURL(_ context.Context, login connectors.Login, state string, _ connectors.BrowserSecrets) (string, error) {
	return c.provider.AuthorizeURL(login.CallbackURL, state), nil
}

// Exchange redeems GitHub's code and reads the user; GitHub's own subject (API URL, login and
// ID) becomes the downstream sub.
func (c *Connector) Exchange(ctx context.Context, login connectors.Login, code string, _ connectors.BrowserSecrets) (*connectors.Identity, error) {
	token, err := c.provider.ExchangeAuthcode(ctx, code, login.CallbackURL)
	if connectors.Unreachable(err) {
		return nil, connectors.Unavailable(err)
	}
	if err != nil {
		return nil, connectors.Refused("GitHub refused the authorization code", err)
	}
	id, err := c.provider.GetUser(ctx, token, login.IDPName)
	if errors.Is(err, ErrNotAllowed) {
		return nil, connectors.Refused("The user is not a member of an organization allowed to log in.", nil)
	}
	if connectors.Unreachable(err) {
		return nil, connectors.Unavailable(err)
	}
	if err != nil {
		return nil, err
	}
	return &connectors.Identity{
		Subject:  id.Subject,
		Username: id.Username,
		Groups:   id.Groups,
		Session:  connectors.Session{GitHub: &connectors.GitHubSession{UpstreamAccessToken: token}},
	}, nil
}

// Refresh reads the user again with the access token from login: they must still be allowed and
// have the same subject. A GitHub that cannot be reached refuses no one: the error is Unavailable.
func (c *Connector) Refresh(ctx context.Context, login connectors.Login, prev connectors.Identity) (*connectors.Identity, error) {
	s := prev.Session.GitHub
	if s == nil || s.UpstreamAccessToken == "" {
		return nil, connectors.Refused("the session holds no GitHub access token", nil)
	}
	id, err := c.provider.Refresh(ctx, s.UpstreamAccessToken, login.IDPName, prev.Subject)
	if connectors.Unreachable(err) {
		return nil, connectors.Unavailable(err)
	}
	if err != nil {
		return nil, connectors.Refused("GitHub no longer accepts the user", err)
	}
	now := prev
	now.Username, now.Groups = id.Username, id.Groups
	return &now, nil
}
