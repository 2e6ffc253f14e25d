package provider

import (
	"fmt"
	"slices"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
)

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

// ConnectorLogin is what the connector needs to know of the identity provider and the issuer.
func (p *Provider) ConnectorLogin(r *Resolved) connectors.Login {
	return connectors.Login{IDPName: r.IDP.DisplayName, CallbackURL: p.Issuer.Endpoint(CallbackPath)}
}
