package federationdomain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// kindNames are the names of kinds, sorted: the kinds a FederationDomain can refer to, in the
// order messages name them.
func kindNames(kinds []connectors.Kind) []string {
	names := make([]string, 0, len(kinds))
	for _, k := range kinds {
		names = append(names, k.Name)
	}
	slices.Sort(names)
	return names
}

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
	for _, objects := range inv {
		for _, o := range objects {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b idpObject) int {
		return cmp.Or(strings.Compare(a.kind, b.kind), strings.Compare(a.name, b.name))
	})
	return out
}

// idpSource is where the identity provider objects of one kind are read: its informer's cache,
// which holds the objects of that kind only.
type idpSource struct {
	kind      connectors.Kind
	namespace string
	objects   cache.Indexer
}

// list reads the identity providers of every source into an inventory, each described by its
// kind.
func list(sources []idpSource) (inventory, error) {
	inv := inventory{}
	for _, src := range sources {
		objects := map[string]idpObject{}
		err := cache.ListAllByNamespace(src.objects, src.namespace, labels.Everything(), func(obj any) {
			o := obj.(connectors.Object) // the cache of a kind's informer holds only its objects
			objects[o.GetName()] = idpObject{kind: src.kind.Name, name: o.GetName(), uid: o.GetUID(), typ: src.kind.Type, flows: src.kind.Flows(o)}
		})
		if err != nil {
			return nil, fmt.Errorf("listing the %ss: %w", src.kind.Name, err)
		}
		inv[src.kind.Name] = objects
	}
	return inv, nil
}
