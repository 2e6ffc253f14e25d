package upstreams

import (
	"sync"
	"testing"

	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oidcprovider"
	"sealion.dev/servers/supervisor/internal/upstreamgithub"
	"sealion.dev/servers/supervisor/internal/upstreamldap"
)

func ldapProvider(t *testing.T, host string) *upstreamldap.Provider {
	t.Helper()
	p, err := upstreamldap.New(upstreamldap.Config{
		Host: host, BindUsername: "cn=svc", BindPassword: "pw",
		UserSearch: upstreamldap.UserSearch{Base: "dc=example", UsernameAttribute: "uid", UIDAttribute: "uid"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRegistry(t *testing.T) {
	var r Registry
	if _, ok := r.OIDC("ns", "a"); ok {
		t.Error("an empty registry found an OIDC upstream")
	}
	if p, ok := r.Password(issuer.TypeLDAP, "ns", "a"); ok || p != nil {
		t.Errorf("an empty registry returned %v, %v; want a nil interface and false", p, ok)
	}
	if g, ok := r.GitHub("ns", "a"); ok || g != nil {
		t.Errorf("an empty registry returned %v, %v; want a nil interface and false", g, ok)
	}

	a := &oidcprovider.Upstream{IssuerURL: "https://a.example"}
	r.SetOIDC("ns", map[string]*oidcprovider.Upstream{"a": a, "b": {IssuerURL: "https://b.example"}})
	r.SetOIDC("other", map[string]*oidcprovider.Upstream{"c": {}})
	if got, ok := r.OIDC("ns", "a"); !ok || got != a {
		t.Errorf("OIDC(ns, a) = %v, %v", got, ok)
	}
	r.SetOIDC("ns", map[string]*oidcprovider.Upstream{"a": a})
	if _, ok := r.OIDC("ns", "b"); ok {
		t.Error("SetOIDC kept an upstream it was not given")
	}
	if _, ok := r.OIDC("other", "c"); !ok {
		t.Error("SetOIDC of one namespace dropped another namespace's upstreams")
	}

	ldap, ad := ldapProvider(t, "ldap.example"), ldapProvider(t, "ad.example")
	r.SetLDAP("ns", map[string]*upstreamldap.Provider{"dir": ldap})
	r.SetActiveDirectory("ns", map[string]*upstreamldap.Provider{"dir": ad})
	for typ, want := range map[issuer.IdentityProviderType]string{issuer.TypeLDAP: "ldap.example", issuer.TypeActiveDirectory: "ad.example"} {
		p, ok := r.Password(typ, "ns", "dir")
		if !ok || p.Config().Host != want {
			t.Errorf("Password(%s) = %v, %v; want the provider of %s", typ, p, ok, want)
		}
	}
	if _, ok := r.Password(issuer.TypeOIDC, "ns", "dir"); ok {
		t.Error("Password found an upstream of type oidc")
	}

	gh, err := upstreamgithub.New(upstreamgithub.Config{ClientID: "id", ClientSecret: "shh", AllowedOrganizations: []string{"seals"}})
	if err != nil {
		t.Fatal(err)
	}
	r.SetGitHub("ns", map[string]*upstreamgithub.Provider{"gh": gh})
	if got, ok := r.GitHub("ns", "gh"); !ok || got != gh {
		t.Errorf("GitHub(ns, gh) = %v, %v", got, ok)
	}
}

// TestRegistryConcurrentUse is for the race detector: lookups while the controller replaces.
func TestRegistryConcurrentUse(t *testing.T) {
	var r Registry
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				r.SetOIDC("ns", map[string]*oidcprovider.Upstream{"a": {}})
			}
		}()
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				r.OIDC("ns", "a")
				r.Password(issuer.TypeLDAP, "ns", "a")
			}
		}()
	}
	wg.Wait()
}
