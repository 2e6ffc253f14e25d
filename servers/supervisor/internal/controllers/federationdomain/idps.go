package federationdomain

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	idplisters "sealion.dev/core/generated/supervisor/listers/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// Kinds of identity providers a FederationDomain can refer to.
const (
	KindOIDC            = "OIDCIdentityProvider"
	KindLDAP            = "LDAPIdentityProvider"
	KindActiveDirectory = "ActiveDirectoryIdentityProvider"
	KindGitHub          = "GitHubIdentityProvider"
)

// kinds lists the supported kinds in the order messages name them.
var kinds = []string{KindActiveDirectory, KindGitHub, KindLDAP, KindOIDC}

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
	for _, kind := range kinds {
		for _, o := range inv[kind] {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b idpObject) int {
		return cmp.Or(cmp.Compare(slices.Index(kinds, a.kind), slices.Index(kinds, b.kind)), strings.Compare(a.name, b.name))
	})
	return out
}

// idpListers read the identity providers of the Supervisor's namespace.
type idpListers struct {
	oidc            idplisters.OIDCIdentityProviderNamespaceLister
	ldap            idplisters.LDAPIdentityProviderNamespaceLister
	activeDirectory idplisters.ActiveDirectoryIdentityProviderNamespaceLister
	github          idplisters.GitHubIdentityProviderNamespaceLister
}

// Flows per type: the first is the one the CLI picks when it is not told.
var (
	browserFlows  = []issuer.Flow{issuer.FlowBrowserAuthcode}
	passwordFlows = []issuer.Flow{issuer.FlowCLIPassword, issuer.FlowBrowserAuthcode}
)

// list reads every identity provider into an inventory.
func (l idpListers) list() (inventory, error) {
	inv := inventory{}
	add := func(kind, name string, uid types.UID, typ issuer.IdentityProviderType, flows []issuer.Flow) {
		if inv[kind] == nil {
			inv[kind] = map[string]idpObject{}
		}
		inv[kind][name] = idpObject{kind: kind, name: name, uid: uid, typ: typ, flows: flows}
	}
	oidcs, err := l.oidc.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, o := range oidcs {
		add(KindOIDC, o.Name, o.UID, issuer.TypeOIDC, oidcFlows(o))
	}
	ldaps, err := l.ldap.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, o := range ldaps {
		add(KindLDAP, o.Name, o.UID, issuer.TypeLDAP, passwordFlows)
	}
	ads, err := l.activeDirectory.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, o := range ads {
		add(KindActiveDirectory, o.Name, o.UID, issuer.TypeActiveDirectory, passwordFlows)
	}
	githubs, err := l.github.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, o := range githubs {
		add(KindGitHub, o.Name, o.UID, issuer.TypeGitHub, browserFlows)
	}
	return inv, nil
}

// oidcFlows: the browser always, and the CLI password flow when the upstream allows the password
// grant.
func oidcFlows(o *idpv1alpha1.OIDCIdentityProvider) []issuer.Flow {
	if o.Spec.AuthorizationConfig.AllowPasswordGrant {
		return []issuer.Flow{issuer.FlowBrowserAuthcode, issuer.FlowCLIPassword}
	}
	return browserFlows
}
