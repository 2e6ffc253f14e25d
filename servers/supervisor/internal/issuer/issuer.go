// Package issuer serves the HTTP endpoints of every FederationDomain. An Issuer is what the
// FederationDomain controller resolved for one servable FederationDomain (its URL, keys and
// identity providers); a Mux routes each request by host and path to the endpoints of the issuer
// it belongs to, and the controller replaces the whole routing table whenever FederationDomains,
// keys or identity providers change.
//
// Endpoints are pluggable: each Endpoints value mounts its routes, relative to the issuer, for
// every issuer (discovery and JWKS today; authorization, token and callback endpoints later).
package issuer

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"sealion.dev/servers/supervisor/internal/idtransform"
	"sealion.dev/servers/supervisor/internal/sessionpolicy"
	"sealion.dev/servers/supervisor/internal/signingkeys"
)

// Issuer is one FederationDomain ready to serve.
type Issuer struct {
	// URL is spec.issuer exactly as written: the issuer of discovery documents and tokens.
	URL string
	// Namespace, Name and UID identify the FederationDomain.
	Namespace, Name string
	UID             types.UID
	// JWKS holds the ID token signing key and the public key set.
	JWKS *signingkeys.JWKS
	// TokenSigningKey, StateSigningKey and StateEncryptionKey are the symmetric keys of opaque
	// tokens and of the upstream state parameter.
	TokenSigningKey, StateSigningKey, StateEncryptionKey []byte
	// CSRFKey signs the CSRF cookie of browser logins: the Supervisor's one key, the same in
	// every issuer.
	CSRFKey []byte
	// IdentityProviders are the identity providers users of this issuer can log in with, sorted by
	// display name; those whose transforms are invalid or fail their examples are left out.
	IdentityProviders []IdentityProvider
	// Sessions bounds the sessions of the issuer's users (spec.sessionLifetimes).
	Sessions sessionpolicy.Policy
}

// IdentityProviderType is the type of an identity provider as IDP discovery and the authorize
// endpoint's pinniped_idp_type parameter name it.
type IdentityProviderType string

// Identity provider types.
const (
	TypeOIDC            IdentityProviderType = "oidc"
	TypeLDAP            IdentityProviderType = "ldap"
	TypeActiveDirectory IdentityProviderType = "activedirectory"
	TypeGitHub          IdentityProviderType = "github"
)

// Types lists every identity provider type, sorted.
var Types = []IdentityProviderType{TypeActiveDirectory, TypeGitHub, TypeLDAP, TypeOIDC}

// Flow is a way of logging in that an identity provider supports.
type Flow string

// Login flows.
const (
	// FlowBrowserAuthcode is the authorization code flow in a browser.
	FlowBrowserAuthcode Flow = "browser_authcode"
	// FlowCLIPassword sends a username and password from the CLI, without a browser.
	FlowCLIPassword Flow = "cli_password"
)

// IdentityProvider is one identity provider of an issuer.
type IdentityProvider struct {
	// DisplayName is the name users and kubeconfigs know it by, unique within the issuer.
	DisplayName string
	Type        IdentityProviderType
	// Flows are the login flows it supports, the preferred one first.
	Flows []Flow
	// Kind, Name and UID identify the identity provider object in the FederationDomain's namespace.
	Kind, Name string
	UID        types.UID
	// Transforms rewrite or reject identities from it; nil passes them through.
	Transforms *idtransform.Pipeline
}

// Path is where an endpoint of the issuer is served: the issuer's path without a trailing slash
// followed by path, which starts with a slash.
func (iss *Issuer) Path(path string) string {
	u, err := url.Parse(iss.URL)
	if err != nil {
		return path
	}
	return strings.TrimSuffix(u.Path, "/") + path
}

// Endpoint is the URL of an endpoint of the issuer, as discovery documents advertise it.
func (iss *Issuer) Endpoint(path string) string {
	return strings.TrimSuffix(iss.URL, "/") + path
}

// routeKey is how the Mux finds an issuer's endpoint: the lower-cased host, without the default
// https port, followed by the path.
func routeKey(host, path string) string {
	host = strings.ToLower(host)
	host = strings.TrimSuffix(host, ":443")
	return host + path
}

// hostOf returns the host (with any port) of the issuer's URL.
func (iss *Issuer) hostOf() (string, error) {
	u, err := url.Parse(iss.URL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("issuer %q of FederationDomain %s/%s has no host", iss.URL, iss.Namespace, iss.Name)
	}
	return u.Host, nil
}
