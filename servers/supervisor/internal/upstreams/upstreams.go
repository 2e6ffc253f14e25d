// Package upstreams is the registry of the Supervisor's usable upstream identity providers: the
// upstreamidp controller puts every Ready OIDCIdentityProvider, LDAPIdentityProvider,
// ActiveDirectoryIdentityProvider and GitHubIdentityProvider in it, and the login endpoints look
// them up by namespace and name (the name is also the provider's display name). A *Registry is
// the oidcprovider.Upstreams of the endpoints. It is safe for concurrent use.
package upstreams

import (
	"sync"

	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oidcprovider"
	"sealion.dev/servers/supervisor/internal/upstreamgithub"
	"sealion.dev/servers/supervisor/internal/upstreamldap"
)

// Registry holds the usable upstreams of each kind, by namespace and name. The zero value is
// empty and ready to use.
type Registry struct {
	mu              sync.RWMutex
	oidc            byNamespace[*oidcprovider.Upstream]
	ldap            byNamespace[*upstreamldap.Provider]
	activeDirectory byNamespace[*upstreamldap.Provider]
	github          byNamespace[*upstreamgithub.Provider]
}

var _ oidcprovider.Upstreams = (*Registry)(nil)

// byNamespace maps namespace, then name, to an upstream.
type byNamespace[T any] map[string]map[string]T

// lookup reads *m under the lock: replace may set the field itself.
func lookup[T any](r *Registry, m *byNamespace[T], namespace, name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := (*m)[namespace][name]
	return v, ok
}

func replace[T any](r *Registry, m *byNamespace[T], namespace string, byName map[string]T) {
	copied := make(map[string]T, len(byName))
	for name, v := range byName {
		copied[name] = v
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if *m == nil {
		*m = byNamespace[T]{}
	}
	(*m)[namespace] = copied
}

// OIDC returns the OIDCIdentityProvider namespace/name.
func (r *Registry) OIDC(namespace, name string) (*oidcprovider.Upstream, bool) {
	return lookup(r, &r.oidc, namespace, name)
}

// Password returns the LDAPIdentityProvider (typ ldap) or ActiveDirectoryIdentityProvider (typ
// activedirectory) namespace/name.
func (r *Registry) Password(typ issuer.IdentityProviderType, namespace, name string) (oidcprovider.PasswordAuthenticator, bool) {
	var p *upstreamldap.Provider
	var ok bool
	switch typ {
	case issuer.TypeLDAP:
		p, ok = lookup(r, &r.ldap, namespace, name)
	case issuer.TypeActiveDirectory:
		p, ok = lookup(r, &r.activeDirectory, namespace, name)
	}
	if !ok {
		return nil, false // not a typed nil: callers compare with nil
	}
	return p, true
}

// GitHub returns the GitHubIdentityProvider namespace/name.
func (r *Registry) GitHub(namespace, name string) (oidcprovider.GitHubAuthenticator, bool) {
	p, ok := lookup(r, &r.github, namespace, name)
	if !ok {
		return nil, false
	}
	return p, true
}

// SetOIDC makes byName the usable OIDCIdentityProviders of namespace, dropping all others.
func (r *Registry) SetOIDC(namespace string, byName map[string]*oidcprovider.Upstream) {
	replace(r, &r.oidc, namespace, byName)
}

// SetLDAP makes byName the usable LDAPIdentityProviders of namespace, dropping all others.
func (r *Registry) SetLDAP(namespace string, byName map[string]*upstreamldap.Provider) {
	replace(r, &r.ldap, namespace, byName)
}

// SetActiveDirectory makes byName the usable ActiveDirectoryIdentityProviders of namespace,
// dropping all others.
func (r *Registry) SetActiveDirectory(namespace string, byName map[string]*upstreamldap.Provider) {
	replace(r, &r.activeDirectory, namespace, byName)
}

// SetGitHub makes byName the usable GitHubIdentityProviders of namespace, dropping all others.
func (r *Registry) SetGitHub(namespace string, byName map[string]*upstreamgithub.Provider) {
	replace(r, &r.github, namespace, byName)
}
