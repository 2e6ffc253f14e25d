package federationdomain

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	idplisters "sealion.dev/core/generated/supervisor/listers/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/kinds"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// kindNames lists the kinds a FederationDomain can refer to, in the order messages name them.
var kindNames = func() []string {
	var names []string
	for _, k := range kinds.All {
		names = append(names, k.Name)
	}
	slices.Sort(names)
	return names
}()

// idpObject is what a FederationDomain needs to know of an identity provider object.
type idpObject struct {
	kind, name string
	uid        types.UID
	typ        issuer.IdentityProviderType
	flows      []issuer.Flow
}

// inventory holds the identity providers of the namespace by kind, then name.
type inventory map[string]map[string]idpObject

func (inv inventory) get(kind, name string) (idpObject, bool) {
	o, ok := inv[kind][name]
	return o, ok
}

// all returns every identity provider, sorted by kind and name.
func (inv inventory) all() []idpObject {
	var out []idpObject
	for _, kind := range kindNames {
		for _, o := range inv[kind] {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b idpObject) int {
		return cmp.Or(cmp.Compare(slices.Index(kindNames, a.kind), slices.Index(kindNames, b.kind)), strings.Compare(a.name, b.name))
	})
	return out
}

// idpListers read the identity providers of the Supervisor's namespace, one lister per kind.
type idpListers struct {
	oidc            idplisters.OIDCIdentityProviderNamespaceLister
	ldap            idplisters.LDAPIdentityProviderNamespaceLister
	activeDirectory idplisters.ActiveDirectoryIdentityProviderNamespaceLister
	github          idplisters.GitHubIdentityProviderNamespaceLister
}

// list reads every identity provider into an inventory, each described by its kind.
func (l idpListers) list() (inventory, error) {
	inv := inventory{}
	err := errors.Join(
		addAll(inv, l.oidc.List), addAll(inv, l.ldap.List),
		addAll(inv, l.activeDirectory.List), addAll(inv, l.github.List),
	)
	return inv, err
}

// addAll adds the objects list returns to inv, with the name, type and flows of their kind.
func addAll[T connectors.Object](inv inventory, list func(labels.Selector) ([]T, error)) error {
	objects, err := list(labels.Everything())
	if err != nil {
		return err
	}
	for _, o := range objects {
		k, ok := kinds.Of(o)
		if !ok {
			return fmt.Errorf("%T is not a kind of kinds.All", o)
		}
		if inv[k.Name] == nil {
			inv[k.Name] = map[string]idpObject{}
		}
		inv[k.Name][o.GetName()] = idpObject{kind: k.Name, name: o.GetName(), uid: o.GetUID(), typ: k.Type, flows: k.Flows(o)}
	}
	return nil
}
