package oidcprovider

import (
	"context"
	"fmt"
	"slices"

	"golang.org/x/oauth2"

	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/upstreamgithub"
	"sealion.dev/servers/supervisor/internal/upstreamldap"
)

// Upstreams finds the identity provider objects of a namespace that are ready to use; a registry
// of upstreams, kept by their controllers, implements it.
type Upstreams interface {
	// OIDC returns the OIDCIdentityProvider name.
	OIDC(namespace, name string) (*Upstream, bool)
	// Password returns the LDAPIdentityProvider (typ ldap) or ActiveDirectoryIdentityProvider
	// (typ activedirectory) name.
	Password(typ issuer.IdentityProviderType, namespace, name string) (PasswordAuthenticator, bool)
	// GitHub returns the GitHubIdentityProvider name.
	GitHub(namespace, name string) (GitHubAuthenticator, bool)
}

// PasswordAuthenticator checks usernames and passwords at an LDAP or Active Directory server;
// *upstreamldap.Provider implements it.
type PasswordAuthenticator interface {
	// Authenticate fails with upstreamldap.ErrInvalidCredentials for a wrong username or
	// password; other errors are the server's or the configuration's.
	Authenticate(ctx context.Context, username, password string) (*upstreamldap.Identity, error)
	// Refresh re-reads a user authenticated earlier and fails when the user is gone, changed or
	// may no longer log in.
	Refresh(ctx context.Context, prev upstreamldap.Identity) (*upstreamldap.Identity, error)
	// Config is the server's configuration; its host and user search base are part of subjects.
	Config() upstreamldap.Config
}

// GitHubAuthenticator logs users in with GitHub's web flow; *upstreamgithub.Provider implements
// it.
type GitHubAuthenticator interface {
	AuthorizeURL(redirectURI, state string, opts ...oauth2.AuthCodeOption) string
	ExchangeAuthcode(ctx context.Context, code, redirectURI string, opts ...oauth2.AuthCodeOption) (string, error)
	GetUser(ctx context.Context, accessToken, idpDisplayName string) (*upstreamgithub.Identity, error)
	Refresh(ctx context.Context, accessToken, idpDisplayName, subject string) (*upstreamgithub.Identity, error)
}

// resolved is an identity provider of the issuer with its upstream; the field of its type is set.
type resolved struct {
	idp      *issuer.IdentityProvider
	oidc     *Upstream
	password PasswordAuthenticator
	github   GitHubAuthenticator
}

func (r *resolved) allows(flow issuer.Flow) bool { return slices.Contains(r.idp.Flows, flow) }

// identityProvider picks the identity provider a login uses: the one named, or the only one. A
// type, when given, must be that identity provider's.
func (p *provider) identityProvider(name, typ string) (*resolved, error) {
	idps := p.iss.IdentityProviders
	var idp *issuer.IdentityProvider
	switch {
	case name != "":
		for i := range idps {
			if idps[i].DisplayName == name {
				idp = &idps[i]
			}
		}
		if idp == nil {
			return nil, fmt.Errorf("no identity provider named %q", name)
		}
	case len(idps) == 1:
		idp = &idps[0]
	case len(idps) == 0:
		return nil, fmt.Errorf("this issuer has no identity providers")
	default:
		return nil, fmt.Errorf("the pinniped_idp_name parameter is required: this issuer has %d identity providers", len(idps))
	}
	if typ != "" && typ != string(idp.Type) {
		return nil, fmt.Errorf("identity provider %q is of type %s, not %s", idp.DisplayName, idp.Type, typ)
	}
	r := &resolved{idp: idp}
	ok := false
	switch idp.Type {
	case issuer.TypeOIDC:
		r.oidc, ok = p.upstreams.OIDC(p.iss.Namespace, idp.Name)
	case issuer.TypeLDAP, issuer.TypeActiveDirectory:
		r.password, ok = p.upstreams.Password(idp.Type, p.iss.Namespace, idp.Name)
	case issuer.TypeGitHub:
		r.github, ok = p.upstreams.GitHub(p.iss.Namespace, idp.Name)
	default:
		return nil, fmt.Errorf("identity provider %q has the unknown type %q", idp.DisplayName, idp.Type)
	}
	if !ok {
		return nil, fmt.Errorf("identity provider %q is not ready", idp.DisplayName)
	}
	return r, nil
}
