// Package oauth serves the OAuth 2.0 / OpenID Connect endpoints of every FederationDomain on top
// of fosite, one package per endpoint: authorize (where logins start, and the CLI's password
// flow), callback (the return from an upstream OIDC provider or GitHub), token (codes, refreshes,
// token exchange and device code polls), devicegrant (the device authorization grant's endpoint,
// verification page and callback) and loginpages (the LDAP/AD login form and the identity provider chooser).
// What they share, the fosite provider of an issuer and its clients, is in provider; the OAuth
// state lives in Kubernetes Secrets (sessions), so that any replica can continue a login.
// Discovery and the JWKS are served by the discovery package.
package oauth

import (
	"time"

	configlisters "sealion.dev/core/generated/supervisor/listers/config/v1alpha1"
	"sealion.dev/core/reservednames"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/authorize"
	"sealion.dev/servers/supervisor/internal/oauth/callback"
	"sealion.dev/servers/supervisor/internal/oauth/devicegrant"
	"sealion.dev/servers/supervisor/internal/oauth/endsession"
	"sealion.dev/servers/supervisor/internal/oauth/loginpages"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/revocation"
	"sealion.dev/servers/supervisor/internal/oauth/securityheaders"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
	"sealion.dev/servers/supervisor/internal/oauth/token"
	"sealion.dev/servers/supervisor/internal/revocations"
)

// Endpoints mounts the OAuth endpoints on every issuer.
type Endpoints struct {
	shared provider.Shared
}

var _ issuer.Endpoints = (*Endpoints)(nil)

// New returns Endpoints that keep OAuth state in storage and find the connectors of upstream
// identity providers in connectors.
func New(storage *sessions.Storage, connectors provider.Connectors) *Endpoints {
	return &Endpoints{shared: provider.Shared{
		Storage: storage, Connectors: connectors, Logins: provider.NewLoginLimiter(time.Now),
		DeviceCodes: provider.NewDeviceCodeLimiter(time.Now), DeviceStarts: provider.NewDeviceStartLimiter(time.Now),
		Secrets: provider.NewSecretChecker(time.Now), ClientFailures: provider.NewClientFailures(time.Now), Now: time.Now,
	}}
}

// WithClients makes the Ready OIDCClients of clients clients of every issuer, next to
// pinniped-cli. Call it before the first issuer is mounted.
func (e *Endpoints) WithClients(clients *provider.OIDCClients) *Endpoints {
	e.shared.Clients = clients
	return e
}

// WithRevocations has the token endpoints refuse the sessions the SessionRevocations of lister
// end. Call it before the endpoints serve their first request.
func (e *Endpoints) WithRevocations(lister configlisters.SessionRevocationNamespaceLister) *Endpoints {
	e.shared.Revocations = &revocations.Checker{Revocations: lister}
	return e
}

// WithReservedNameExceptions lets identities carry the given "system:" names; every other reserved
// name stays refused. Call it before the endpoints serve their first request.
func (e *Endpoints) WithReservedNameExceptions(allowed reservednames.Exceptions) *Endpoints {
	e.shared.Reserved = allowed
	return e
}

// WithAudit has the endpoints write their audit events to log. Call it before the first issuer is
// mounted.
func (e *Endpoints) WithAudit(log *audit.Logger) *Endpoints {
	e.shared.Audit = log
	return e
}

// Mount builds the fosite provider of iss and mounts its endpoints. An issuer without a signing
// key or token key serves nothing: the controller has not finished preparing it.
//
// The browser's endpoints get Pinniped's security headers on every response, with the policy of
// the page each answers with: authorize and callback the form_post page (their answer when the
// client asks for response_mode=form_post), the login form itself on GET and the form_post page
// on POST, the chooser its own. The token endpoint, for programs, gets none, as in Pinniped.
func (e *Endpoints) Mount(r issuer.Router, iss *issuer.Issuer) {
	p := provider.New(iss, &e.shared)
	if p == nil {
		return
	}
	r.Handle(provider.AuthorizePath, securityheaders.Wrap(provider.StrictForm(authorize.New(p)), provider.FormPostPolicy))
	r.Handle(provider.CallbackPath, securityheaders.Wrap(callback.New(p), provider.FormPostPolicy))
	r.Handle(provider.TokenPath, provider.StrictForm(token.New(p)))
	r.Handle(provider.LoginPath, securityheaders.WrapPost(provider.LimitBody(loginpages.Login(p)), loginpages.LoginPolicy, provider.FormPostPolicy))
	r.Handle(provider.ChooseIdentityProviderPath, securityheaders.Wrap(loginpages.Chooser(p), loginpages.ChooserPolicy))
	r.Handle(provider.DeviceAuthorizationPath, provider.StrictForm(devicegrant.Authorization(p)))
	r.Handle(provider.DevicePath, securityheaders.Wrap(provider.LimitBody(devicegrant.Verification(p)), devicegrant.Policy))
	r.Handle(provider.DeviceCallbackPath, securityheaders.Wrap(devicegrant.Callback(p), devicegrant.Policy))
	r.Handle(provider.RevocationPath, provider.StrictForm(revocation.New(p)))
	r.Handle(provider.LogoutPath, provider.StrictForm(endsession.New(p)))
}
