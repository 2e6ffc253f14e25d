// Package kinds lists the kinds of identity provider objects the Supervisor federates: one line
// per kind, with its name, login type, flows, informer, client and factory. The upstreamidp
// controller opens the objects of every kind listed here, and the federationdomain controller lets
// FederationDomains refer to them; a new kind is a connector package and a line here.
package kinds

import (
	idpclient "sealion.dev/core/generated/supervisor/clientset/versioned/typed/idp/v1alpha1"
	idpinformers "sealion.dev/core/generated/supervisor/informers/externalversions/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/activedirectoryidp"
	"sealion.dev/servers/supervisor/internal/connectors/githubidp"
	"sealion.dev/servers/supervisor/internal/connectors/ldapidp"
	"sealion.dev/servers/supervisor/internal/connectors/oidcidp"
	"sealion.dev/servers/supervisor/internal/issuer"
)

type (
	informers = idpinformers.Interface
	clients   = idpclient.IdpV1alpha1Interface
)

// All are the kinds, sorted by name: the order in which messages list them.
var All = []connectors.Kind{
	connectors.Define("ActiveDirectoryIdentityProvider", issuer.TypeActiveDirectory, activedirectoryidp.Flows, informers.ActiveDirectoryIdentityProviders, clients.ActiveDirectoryIdentityProviders, activedirectoryidp.Open),
	connectors.Define("GitHubIdentityProvider", issuer.TypeGitHub, githubidp.Flows, informers.GitHubIdentityProviders, clients.GitHubIdentityProviders, githubidp.Open),
	connectors.Define("LDAPIdentityProvider", issuer.TypeLDAP, ldapidp.Flows, informers.LDAPIdentityProviders, clients.LDAPIdentityProviders, ldapidp.Open),
	connectors.Define("OIDCIdentityProvider", issuer.TypeOIDC, oidcidp.Flows, informers.OIDCIdentityProviders, clients.OIDCIdentityProviders, oidcidp.Open),
}
