package upstreamlogins

import (
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// upstreams is the tests' registry of connectors, all in namespace.
type upstreams struct{ connectors.Registry }

func (u *upstreams) add(typ issuer.IdentityProviderType, name string, c connectors.Connector) {
	u.Set(typ, namespace, name, c)
}
