// Package oidcprovider serves the OAuth 2.0 / OpenID Connect endpoints of every FederationDomain
// (authorize, upstream callback, token, the LDAP/AD login form and the identity provider chooser)
// on top of fosite. Users log in at an upstream identity provider: in a browser at an OIDC
// provider or GitHub, on the Supervisor's login form for LDAP and Active Directory, or from the
// CLI with a username and password (the cli_password flow). The Supervisor then issues its own
// authorization codes, access, refresh and ID tokens, the latter signed with the
// FederationDomain's ES256 key. The clients are the pinniped CLI (public, pinniped-cli) and the
// OIDCClients of the Supervisor's namespace (confidential, see OIDCClients). All OAuth state
// lives in Kubernetes Secrets (see Storage) so that any replica can continue a login.
package oidcprovider

import (
	"context"
	"crypto/ecdsa"
	"net/http"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/token/jwt"

	"sealion.dev/servers/supervisor/internal/issuer"
)

// Endpoint paths, relative to the issuer.
const (
	AuthorizePath = "/oauth2/authorize"
	TokenPath     = "/oauth2/token"
	CallbackPath  = "/callback"
	// LoginPath serves the username and password form of LDAP and Active Directory logins.
	LoginPath = "/login"
	// ChooseIdentityProviderPath lets the user pick an identity provider when the client named
	// none and the issuer has several.
	ChooseIdentityProviderPath = "/choose_identity_provider"
)

// Lifetimes; none is configurable.
const (
	AuthorizeCodeLifetime = 10 * time.Minute
	AccessTokenLifetime   = 2 * time.Minute
	IDTokenLifetime       = 2 * time.Minute
	// SessionLifetime bounds refresh tokens: 9 hours from the initial login, however often they rotate.
	SessionLifetime = 9 * time.Hour
	// StateLifetime is how long a user may take at the upstream identity provider.
	StateLifetime = 90 * time.Minute
)

// Scopes the Supervisor knows.
const (
	ScopeOpenID          = "openid"
	ScopeOfflineAccess   = "offline_access"
	ScopeRequestAudience = "pinniped:request-audience"
	ScopeUsername        = "username"
	ScopeGroups          = "groups"
)

// Grant types.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
	GrantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
)

// PinnipedCLIClientID is the static public client of the pinniped CLI.
const PinnipedCLIClientID = "pinniped-cli"

// pinnipedCLI may redirect to http://127.0.0.1/callback on any port (fosite matches loopback
// redirect URIs without the port, as RFC 8252 asks).
func pinnipedCLI() fosite.Client {
	return oidcClient{&fosite.DefaultOpenIDConnectClient{
		DefaultClient: &fosite.DefaultClient{
			ID:            PinnipedCLIClientID,
			Public:        true,
			RedirectURIs:  []string{"http://127.0.0.1/callback", "http://[::1]/callback"},
			GrantTypes:    []string{GrantAuthorizationCode, GrantRefreshToken, GrantTokenExchange},
			ResponseTypes: []string{"code"},
			Scopes:        []string{ScopeOpenID, ScopeOfflineAccess, "profile", "email", ScopeRequestAudience, ScopeUsername, ScopeGroups},
		},
		TokenEndpointAuthMethod: "none",
	}}
}

// oidcClient is a client that may ask for every response mode discovery announces: form_post
// as well as the default query.
type oidcClient struct {
	*fosite.DefaultOpenIDConnectClient
}

var _ fosite.ResponseModeClient = oidcClient{}

func (oidcClient) GetResponseModes() []fosite.ResponseModeType {
	return []fosite.ResponseModeType{fosite.ResponseModeDefault, fosite.ResponseModeQuery, fosite.ResponseModeFormPost}
}

// Endpoints mounts the authorize, callback and token endpoints on every issuer.
type Endpoints struct {
	storage    *Storage
	connectors Connectors
	clients    *OIDCClients
	now        func() time.Time
	logins     *loginLimiter
}

var _ issuer.Endpoints = (*Endpoints)(nil)

// New returns Endpoints that keep OAuth state in storage and find the connectors of upstream
// identity providers in connectors.
func New(storage *Storage, connectors Connectors) *Endpoints {
	e := &Endpoints{storage: storage, connectors: connectors, now: time.Now}
	e.logins = newLoginLimiter(func() time.Time { return e.now() })
	storage.revoker = e
	return e
}

// WithClients makes the Ready OIDCClients of clients clients of every issuer, next to
// pinniped-cli. Call it before the first issuer is mounted.
func (e *Endpoints) WithClients(clients *OIDCClients) *Endpoints {
	e.clients = clients
	return e
}

// Mount builds a fosite provider for iss and mounts its endpoints. An issuer without a signing
// key or token key serves nothing: the controller has not finished preparing it.
func (e *Endpoints) Mount(r issuer.Router, iss *issuer.Issuer) {
	if iss.JWKS == nil || len(iss.TokenSigningKey) < 32 || len(iss.StateEncryptionKey) != 32 {
		return
	}
	key, ok := iss.JWKS.Active.Key.(*ecdsa.PrivateKey)
	if !ok {
		return
	}
	p := &provider{Endpoints: e, iss: iss, keyID: iss.JWKS.Active.KeyID}
	p.signer = &jwt.DefaultSigner{GetPrivateKey: func(context.Context) (any, error) { return key, nil }}
	p.config = newConfig(iss)
	p.hmac = compose.NewOAuth2HMACStrategy(p.config)
	store := e.storage.forClients(e.clients)
	p.oauth = p.compose(p.config, store)
	p.config.TokenEndpointHandlers.Append(&tokenExchange{provider: p, store: store})
	// The authorize endpoint runs every check of the final authorize response before sending
	// the user upstream, with storage that keeps nothing: the login has not happened yet.
	p.validate = p.compose(newConfig(iss), nullStore{store})
	p.state = &stateCodec{key: iss.StateEncryptionKey}

	r.Handle(AuthorizePath, strictForm(http.HandlerFunc(p.authorize)))
	r.Handle(CallbackPath, http.HandlerFunc(p.callback))
	r.Handle(TokenPath, strictForm(http.HandlerFunc(p.token)))
	r.Handle(LoginPath, limitBody(http.HandlerFunc(p.login)))
	r.Handle(ChooseIdentityProviderPath, http.HandlerFunc(p.chooseIdentityProvider))
}

func newConfig(iss *issuer.Issuer) *fosite.Config {
	return &fosite.Config{
		IDTokenIssuer:         iss.URL,
		TokenURL:              iss.Endpoint(TokenPath),
		AuthorizeCodeLifespan: AuthorizeCodeLifetime,
		AccessTokenLifespan:   AccessTokenLifetime,
		IDTokenLifespan:       IDTokenLifetime,
		RefreshTokenLifespan:  SessionLifetime,
		RefreshTokenScopes:    []string{ScopeOfflineAccess},
		ScopeStrategy:         fosite.ExactScopeStrategy,
		EnforcePKCE:           true,
		MinParameterEntropy:   fosite.MinParameterEntropy,
		GlobalSecret:          iss.TokenSigningKey,
		FormPostHTMLTemplate:  formPostPage,
	}
}

// compose builds a fosite provider for the authorization code flow with PKCE and refreshes.
func (p *provider) compose(cfg *fosite.Config, storage any) fosite.OAuth2Provider {
	return compose.Compose(cfg, storage,
		&compose.CommonStrategy{
			CoreStrategy:               p.hmac,
			OpenIDConnectTokenStrategy: compose.NewOpenIDConnectStrategy(p.signer.GetPrivateKey, cfg),
			Signer:                     p.signer,
		},
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OpenIDConnectExplicitFactory,
		compose.OpenIDConnectRefreshFactory,
		compose.OAuth2PKCEFactory,
	)
}

// provider serves the endpoints of one issuer.
type provider struct {
	*Endpoints
	iss    *issuer.Issuer
	keyID  string
	signer *jwt.DefaultSigner
	hmac   *oauth2.HMACSHAStrategy
	config *fosite.Config
	oauth  fosite.OAuth2Provider
	// validate checks authorize requests without storing anything.
	validate fosite.OAuth2Provider
	state    *stateCodec
}
