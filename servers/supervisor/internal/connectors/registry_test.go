package connectors

import (
	"sync"
	"testing"

	"sealion.dev/servers/supervisor/internal/issuer"
)

type fakeConnector struct{ name string }

func TestRegistry(t *testing.T) {
	var r Registry
	if c, ok := r.Get(issuer.TypeLDAP, "ns", "a"); ok || c != nil {
		t.Errorf("an empty registry returned %v, %v; want nil and false", c, ok)
	}
	ldap, ad := &fakeConnector{"ldap"}, &fakeConnector{"ad"}
	r.Set(issuer.TypeLDAP, "ns", "dir", ldap)
	r.Set(issuer.TypeActiveDirectory, "ns", "dir", ad)
	r.Set(issuer.TypeLDAP, "other", "dir", &fakeConnector{"elsewhere"})
	for typ, want := range map[issuer.IdentityProviderType]*fakeConnector{issuer.TypeLDAP: ldap, issuer.TypeActiveDirectory: ad} {
		if got, ok := r.Get(typ, "ns", "dir"); !ok || got != want {
			t.Errorf("Get(%s, ns, dir) = %v, %v; want %v", typ, got, ok, want)
		}
	}
	if _, ok := r.Get(issuer.TypeOIDC, "ns", "dir"); ok {
		t.Error("Get found a connector of another type")
	}
	r.Delete(issuer.TypeLDAP, "ns", "dir")
	if _, ok := r.Get(issuer.TypeLDAP, "ns", "dir"); ok {
		t.Error("Delete kept the connector")
	}
	if _, ok := r.Get(issuer.TypeLDAP, "other", "dir"); !ok {
		t.Error("Delete of one namespace dropped another namespace's connector")
	}
	if _, ok := r.Get(issuer.TypeActiveDirectory, "ns", "dir"); !ok {
		t.Error("Delete of one type dropped another type's connector")
	}
}

// TestRegistryConcurrentUse is for the race detector: lookups while the controller replaces.
func TestRegistryConcurrentUse(t *testing.T) {
	var r Registry
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 100 {
				r.Set(issuer.TypeOIDC, "ns", "a", &fakeConnector{})
				r.Delete(issuer.TypeOIDC, "ns", "b")
			}
		}()
		go func() {
			defer wg.Done()
			for range 100 {
				r.Get(issuer.TypeOIDC, "ns", "a")
			}
		}()
	}
	wg.Wait()
}

func TestRegistryUnreachable(t *testing.T) {
	var r Registry
	r.Unreachable(issuer.TypeLDAP, "ns", "dir") // nobody listens: nothing happens
	var heard []string
	r.OnUnreachable(issuer.TypeLDAP, func(ns, name string) { heard = append(heard, ns+"/"+name) })
	r.Unreachable(issuer.TypeLDAP, "ns", "dir")
	r.Unreachable(issuer.TypeOIDC, "ns", "dex")
	if len(heard) != 1 || heard[0] != "ns/dir" {
		t.Errorf("the LDAP listener heard %v, want only ns/dir", heard)
	}
}
