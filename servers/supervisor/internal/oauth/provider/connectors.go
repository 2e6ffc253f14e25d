package provider

import (
	"fmt"
	"slices"

	"github.com/ory/fosite"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
)

// Connectors finds the connectors of the identity provider objects and hears of those whose
// upstream could not be reached; the connectors.Registry that the upstreamidp controller keeps
// implements it.
type Connectors interface {
	sessions.Connectors
	// Unreachable reports that a call of the connector of the identity provider object
	// namespace/name of type typ could not reach its upstream.
	Unreachable(typ issuer.IdentityProviderType, namespace, name string)
}

// Resolved is an identity provider of the issuer with its connector.
type Resolved struct {
	IDP  *issuer.IdentityProvider
	Conn connectors.Connector
}

// Allows reports whether the identity provider may be used in flow.
func (r *Resolved) Allows(flow issuer.Flow) bool { return slices.Contains(r.IDP.Flows, flow) }

// IdentityProvider picks the identity provider a login uses: the one named, or the only one. A
// type, when given, must be that identity provider's.
func (p *Provider) IdentityProvider(name, typ string) (*Resolved, error) {
	idps := p.Issuer.IdentityProviders
	var idp *issuer.IdentityProvider
	switch {
	case name != "":
		for i := range idps {
			if idps[i].DisplayName == name {
				idp = &idps[i]
			}
		}
		if idp == nil {
			return nil, fmt.Errorf("no identity provider named %q", name)
		}
	case len(idps) == 1:
		idp = &idps[0]
	case len(idps) == 0:
		return nil, fmt.Errorf("this issuer has no identity providers")
	default:
		return nil, fmt.Errorf("the pinniped_idp_name parameter is required: this issuer has %d identity providers", len(idps))
	}
	if typ != "" && typ != string(idp.Type) {
		return nil, fmt.Errorf("identity provider %q is of type %s, not %s", idp.DisplayName, idp.Type, typ)
	}
	conn, ok := p.Connectors.Get(idp.Type, p.Issuer.Namespace, idp.Name)
	if !ok {
		return nil, fmt.Errorf("identity provider %q is not ready", idp.DisplayName)
	}
	return &Resolved{IDP: idp, Conn: conn}, nil
}

// SessionIdentityProvider resolves the identity provider of a stored login: by its display name,
// or, for a session that a Pinniped Supervisor stored (which names the object only), by the
// object's name and UID. The caller still checks that the object is the login's.
func (p *Provider) SessionIdentityProvider(displayName, objectName, uid string) (*Resolved, error) {
	if displayName == "" && objectName != "" {
		for _, idp := range p.Issuer.IdentityProviders {
			if idp.Name == objectName && string(idp.UID) == uid {
				displayName = idp.DisplayName
			}
		}
	}
	return p.IdentityProvider(displayName, "")
}

// UpstreamUnavailable answers a call of res's connector that could not reach the upstream:
// temporarily_unavailable, naming the identity provider, for a client to try again later rather
// than log in again. It reports the outage, so that the upstreamidp controller probes the upstream
// now and the object's status shows it.
func (p *Provider) UpstreamUnavailable(res *Resolved, cause error) *fosite.RFC6749Error {
	p.Connectors.Unreachable(res.IDP.Type, p.Issuer.Namespace, res.IDP.Name)
	return fosite.ErrTemporarilyUnavailable.WithHintf("The identity provider '%s' is unreachable; try again later.", res.IDP.DisplayName).WithWrap(cause)
}

// ConnectorLogin is what the connector needs to know of the identity provider and the issuer.
func (p *Provider) ConnectorLogin(r *Resolved) connectors.Login {
	return connectors.Login{IDPName: r.IDP.DisplayName, CallbackURL: p.Issuer.Endpoint(CallbackPath)}
}
