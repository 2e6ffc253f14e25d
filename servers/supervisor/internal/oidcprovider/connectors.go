package oidcprovider

import (
	"fmt"
	"slices"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// Connectors finds the connectors of the identity provider objects that are ready to use; the
// connectors.Registry that the upstreamidp controller keeps implements it.
type Connectors interface {
	// Get returns the connector of the identity provider object namespace/name of type typ.
	Get(typ issuer.IdentityProviderType, namespace, name string) (connectors.Connector, bool)
}

// resolved is an identity provider of the issuer with its connector.
type resolved struct {
	idp  *issuer.IdentityProvider
	conn connectors.Connector
}

func (r *resolved) allows(flow issuer.Flow) bool { return slices.Contains(r.idp.Flows, flow) }

// identityProvider picks the identity provider a login uses: the one named, or the only one. A
// type, when given, must be that identity provider's.
func (p *provider) identityProvider(name, typ string) (*resolved, error) {
	idps := p.iss.IdentityProviders
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
	conn, ok := p.connectors.Get(idp.Type, p.iss.Namespace, idp.Name)
	if !ok {
		return nil, fmt.Errorf("identity provider %q is not ready", idp.DisplayName)
	}
	return &resolved{idp: idp, conn: conn}, nil
}

// login is what the connector needs to know of the identity provider and the issuer.
func (p *provider) connectorLogin(r *resolved) connectors.Login {
	return connectors.Login{IDPName: r.idp.DisplayName, CallbackURL: p.iss.Endpoint(CallbackPath)}
}
