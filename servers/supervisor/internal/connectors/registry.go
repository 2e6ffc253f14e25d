package connectors

import (
	"sync"

	"sealion.dev/servers/supervisor/internal/issuer"
)

// Registry holds the Ready connectors, by identity provider type, namespace and name (the name is
// also the default display name). The upstreamidp controller keeps it; the login endpoints look
// connectors up in it at each request. The zero value is empty and ready to use; it is safe for
// concurrent use.
type Registry struct {
	mu         sync.RWMutex
	connectors map[key]Connector
}

type key struct {
	typ             issuer.IdentityProviderType
	namespace, name string
}

// Get returns the Ready connector of the identity provider object namespace/name of type typ.
func (r *Registry) Get(typ issuer.IdentityProviderType, namespace, name string) (Connector, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.connectors[key{typ, namespace, name}]
	return c, ok
}

// Set makes c the connector of namespace/name of type typ, replacing any other.
func (r *Registry) Set(typ issuer.IdentityProviderType, namespace, name string, c Connector) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.connectors == nil {
		r.connectors = map[key]Connector{}
	}
	r.connectors[key{typ, namespace, name}] = c
}

// Delete drops the connector of namespace/name of type typ: the object is gone or not Ready.
func (r *Registry) Delete(typ issuer.IdentityProviderType, namespace, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.connectors, key{typ, namespace, name})
}
