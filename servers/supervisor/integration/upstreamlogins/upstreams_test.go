package upstreamlogins

import (
	"sync"

	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oidcprovider"
)

// upstreams is the tests' registry of upstream identity providers in namespace.
type upstreams struct {
	mu   sync.Mutex
	byID map[string]any // "<type>/<name>"
}

var _ oidcprovider.Upstreams = (*upstreams)(nil)

func (u *upstreams) add(typ issuer.IdentityProviderType, name string, upstream any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byID == nil {
		u.byID = map[string]any{}
	}
	u.byID[string(typ)+"/"+name] = upstream
}

// get returns the upstream, or nil.
func (u *upstreams) get(typ issuer.IdentityProviderType, ns, name string) any {
	u.mu.Lock()
	defer u.mu.Unlock()
	if ns != namespace {
		return nil
	}
	return u.byID[string(typ)+"/"+name]
}

func (u *upstreams) OIDC(ns, name string) (*oidcprovider.Upstream, bool) {
	up := u.get(issuer.TypeOIDC, ns, name)
	o, ok := up.(*oidcprovider.Upstream)
	return o, ok
}

func (u *upstreams) Password(typ issuer.IdentityProviderType, ns, name string) (oidcprovider.PasswordAuthenticator, bool) {
	up := u.get(typ, ns, name)
	p, ok := up.(oidcprovider.PasswordAuthenticator)
	return p, ok
}

func (u *upstreams) GitHub(ns, name string) (oidcprovider.GitHubAuthenticator, bool) {
	up := u.get(issuer.TypeGitHub, ns, name)
	g, ok := up.(oidcprovider.GitHubAuthenticator)
	return g, ok
}
