package connectors

import (
	"sync"

	"sealion.dev/servers/supervisor/internal/issuer"
)

// Registry holds the connectors the endpoints use, by identity provider type, namespace and name
// (the name is also the default display name): those of Ready objects, and the last good one of
// an object whose upstream cannot be reached (see Factory). The upstreamidp controller keeps it;
// the login endpoints look connectors up in it at each request and report to it the upstreams
// their calls could not reach, which it passes on to the controller of the type. The zero value
// is empty and ready to use; it is safe for concurrent use.
type Registry struct {
	mu          sync.RWMutex
	connectors  map[key]Connector
	unreachable map[issuer.IdentityProviderType]func(namespace, name string)
}

type key struct {
	typ             issuer.IdentityProviderType
	namespace, name string
}

// Get returns the connector of the identity provider object namespace/name of type typ.
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

// Delete drops the connector of namespace/name of type typ: the object is gone or unusable.
func (r *Registry) Delete(typ issuer.IdentityProviderType, namespace, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.connectors, key{typ, namespace, name})
}

// OnUnreachable makes f hear the reports of Unreachable for objects of type typ, replacing any
// earlier f. f is called on the reporting request's goroutine and must not block.
func (r *Registry) OnUnreachable(typ issuer.IdentityProviderType, f func(namespace, name string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unreachable == nil {
		r.unreachable = map[issuer.IdentityProviderType]func(namespace, name string){}
	}
	r.unreachable[typ] = f
}

// Unreachable reports that a call of the connector of namespace/name of type typ could not reach
// its upstream, so that the object's controller probes it now rather than at the end of ProbeTTL.
func (r *Registry) Unreachable(typ issuer.IdentityProviderType, namespace, name string) {
	r.mu.RLock()
	f := r.unreachable[typ]
	r.mu.RUnlock()
	if f != nil {
		f(namespace, name)
	}
}
