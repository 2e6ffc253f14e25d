// Package provider is what every OAuth endpoint of an issuer shares: the fosite provider
// composed for the issuer (authorization code flow with PKCE, refreshes, OpenID Connect), its
// clients (the pinniped CLI and the OIDCClients), the sealed upstream state that carries a login
// through the upstream identity provider, the choice of an identity provider and its connector,
// and the last step of every login, which answers the authorize request with our own
// authorization code. The endpoints themselves are packages of their own (authorize, callback,
// token, loginpages) that the oauth package mounts.
package provider

import (
	"context"
	"crypto/ecdsa"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/token/jwt"

	"sealion.dev/core/reservednames"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
	"sealion.dev/servers/supervisor/internal/revocations"
	"sealion.dev/servers/supervisor/internal/sessionpolicy"
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
	// RevocationPath is the token revocation endpoint (RFC 7009), an addition to Pinniped's.
	RevocationPath = "/oauth2/revoke"
	// LogoutPath is the end-session endpoint (OpenID Connect RP-Initiated Logout 1.0), an addition
	// to Pinniped's.
	LogoutPath = "/oauth2/logout"
)

// Lifetimes that are not those of stored state (see sessions for those) nor sessions' (see
// sessionpolicy); none is configurable.
const (
	IDTokenLifetime = 2 * time.Minute
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
// redirect URIs without the port, as RFC 8252 asks), and to the issuer's deviceCallback, as
// every client allowed the device grant.
func pinnipedCLI(deviceCallback string) fosite.Client {
	return oidcClient{&fosite.DefaultOpenIDConnectClient{
		DefaultClient: &fosite.DefaultClient{
			ID:            PinnipedCLIClientID,
			Public:        true,
			RedirectURIs:  []string{"http://127.0.0.1/callback", "http://[::1]/callback", deviceCallback},
			GrantTypes:    []string{GrantAuthorizationCode, GrantRefreshToken, GrantTokenExchange, GrantDeviceCode},
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

// Shared is what the providers of all issuers share.
type Shared struct {
	Storage    *sessions.Storage
	Connectors Connectors
	// Clients, when set, makes the Ready OIDCClients clients of every issuer, next to pinniped-cli.
	Clients *OIDCClients
	// Logins limits password attempts per user of an identity provider, whatever the issuer.
	Logins *AttemptLimiter
	// DeviceCodes limits the entries of user codes at the verification pages per source, and
	// DeviceStarts the device authorizations started.
	DeviceCodes, DeviceStarts *AttemptLimiter
	// Secrets compares client secrets with their hashes for every issuer (SecretChecker), and
	// ClientFailures counts the failed client authentications at the token endpoints.
	Secrets        *SecretChecker
	ClientFailures *ClientFailures
	// Reserved are the operator's exceptions to the refusal of "system:" usernames and groups; the
	// zero value refuses them all.
	Reserved reservednames.Exceptions
	Now      func() time.Time
	// Revocations, when set, end the sessions the SessionRevocations match.
	Revocations *revocations.Checker
	// Audit receives Pinniped's audit events of logins and token requests.
	Audit *audit.Logger
}

// Provider is the fosite provider of one issuer and what its endpoints share.
type Provider struct {
	*Shared
	Issuer *issuer.Issuer
	// OAuth validates requests and writes responses and errors.
	OAuth fosite.OAuth2Provider
	// Validate checks authorize requests without storing anything.
	Validate fosite.OAuth2Provider

	keyID  string
	signer *jwt.DefaultSigner
	hmac   prefixedHMAC
	config *fosite.Config
	// fosite is OAuth's own type, for the client authentication of the device endpoints.
	fosite *fosite.Fosite
	store  *sessions.Store
	state  *stateCodec
}

// New builds the provider of iss, or returns nil for an issuer without a signing key, token,
// state or CSRF key: the controller has not finished preparing it.
func New(iss *issuer.Issuer, shared *Shared) *Provider {
	if iss.JWKS == nil || len(iss.TokenSigningKey) < 32 || len(iss.StateEncryptionKey) != 32 || len(iss.CSRFKey) != 32 {
		return nil
	}
	key, ok := iss.JWKS.Active.Key.(*ecdsa.PrivateKey)
	if !ok {
		return nil
	}
	p := &Provider{Shared: shared, Issuer: iss, keyID: iss.JWKS.Active.KeyID}
	p.signer = &jwt.DefaultSigner{GetPrivateKey: func(context.Context) (any, error) { return key, nil }}
	p.config = newConfig(iss)
	p.config.ClientSecretsHasher = shared.Secrets
	p.hmac = newPrefixedHMAC(p.config)
	deviceCallback := iss.Endpoint(DeviceCallbackPath)
	p.store = shared.Storage.ForClients(&clients{cli: pinnipedCLI(deviceCallback), oidcClients: shared.Clients, deviceCallback: deviceCallback})
	p.fosite = p.compose(p.config, p.store)
	p.OAuth = p.fosite
	// The authorize endpoint runs every check of the final authorize response before sending
	// the user upstream, with storage that keeps nothing: the login has not happened yet.
	p.Validate = p.compose(newConfig(iss), nullStore{p.store})
	p.state = &stateCodec{key: iss.StateEncryptionKey}
	return p
}

// SessionPolicy bounds the sessions client has at this issuer: the FederationDomain's policy,
// shortened by the client's own when it is an OIDCClient with one.
func (p *Provider) SessionPolicy(client fosite.Client) sessionpolicy.Policy {
	policy := p.Issuer.Sessions
	if policy == (sessionpolicy.Policy{}) {
		policy = sessionpolicy.Default // an Issuer made without the controller, as in tests
	}
	if c, ok := client.(*confidentialClient); ok {
		policy = policy.ShortenedBy(c.sessionLifetimes)
	}
	return policy
}

// SessionEnded is the refusal of a request for the session s of req when a SessionRevocation or
// its policy (the current one: a shortened policy applies to sessions already started) has ended
// it, or nil. The user is not told which SessionRevocation, nor its reason: those are for the
// administrators' audit log.
func (p *Provider) SessionEnded(s *sessions.Session, req fosite.Requester) error {
	if p.Revocations.Ended(p.Issuer.Name, s) {
		return fosite.ErrInvalidGrant.WithHint("The session ended: an administrator ended it.")
	}
	if why := p.SessionPolicy(req.GetClient()).Ended(s.Custom.LoginTime, s.Custom.LastRefreshTime, p.Now().UTC()); why != "" {
		return fosite.ErrInvalidGrant.WithHintf("The session ended: %s.", why)
	}
	return nil
}

// RefreshTokenSession returns the stored request of a refresh token of this issuer.
func (p *Provider) RefreshTokenSession(ctx context.Context, token string) (fosite.Requester, error) {
	return p.store.GetRefreshTokenSession(ctx, p.hmac.RefreshTokenSignature(ctx, token), sessions.NewSession())
}

// RevokeToken ends the session of token, a refresh or access token of client (hint says which
// to try first), as RFC 7009 asks: every token of its login is revoked, its records deleted and
// its upstream tokens revoked. A token that is unknown or already revoked is no error.
func (p *Provider) RevokeToken(ctx context.Context, token string, hint fosite.TokenType, client fosite.Client) error {
	h := &oauth2.TokenRevocationHandler{TokenRevocationStorage: p.store, RefreshTokenStrategy: p.hmac, AccessTokenStrategy: p.hmac}
	return h.RevokeToken(ctx, token, hint, client)
}

// KnownClient reports whether id names a client of this issuer.
func (p *Provider) KnownClient(ctx context.Context, id string) bool {
	_, err := p.store.GetClient(ctx, id)
	return err == nil
}

// AddTokenEndpointHandler adds a grant to the token endpoint; fosite reads the handlers of its
// configuration at each request.
func (p *Provider) AddTokenEndpointHandler(h fosite.TokenEndpointHandler) {
	p.config.TokenEndpointHandlers.Append(h)
}

// AccessTokenSession returns the stored request of an access token of this issuer.
func (p *Provider) AccessTokenSession(ctx context.Context, token string) (fosite.Requester, error) {
	return p.store.GetAccessTokenSession(ctx, p.hmac.AccessTokenSignature(ctx, token), sessions.NewSession())
}

// ValidateAccessToken checks that token, whose stored request is req, has not expired.
func (p *Provider) ValidateAccessToken(ctx context.Context, req fosite.Requester, token string) error {
	return p.hmac.ValidateAccessToken(ctx, req, token)
}

// SignIDToken signs an ID token with the issuer's active key.
func (p *Provider) SignIDToken(ctx context.Context, claims *jwt.IDTokenClaims) (string, error) {
	token, _, err := p.signer.Generate(ctx, claims.ToMapClaims(), &jwt.Headers{Extra: map[string]any{"kid": p.keyID}})
	return token, err
}

func newConfig(iss *issuer.Issuer) *fosite.Config {
	return &fosite.Config{
		IDTokenIssuer:         iss.URL,
		TokenURL:              iss.Endpoint(TokenPath),
		AuthorizeCodeLifespan: sessions.AuthorizeCodeLifetime,
		AccessTokenLifespan:   sessions.AccessTokenLifetime,
		IDTokenLifespan:       IDTokenLifetime,
		// The token endpoint sets refresh tokens' expiries from the session policy.
		RefreshTokenLifespan: sessionpolicy.Longest,
		RefreshTokenScopes:   []string{ScopeOfflineAccess},
		ScopeStrategy:        fosite.ExactScopeStrategy,
		EnforcePKCE:          true,
		MinParameterEntropy:  fosite.MinParameterEntropy,
		GlobalSecret:         iss.TokenSigningKey,
		FormPostHTMLTemplate: formPostPage,
	}
}

// compose builds a fosite provider for the authorization code flow with PKCE and refreshes.
func (p *Provider) compose(cfg *fosite.Config, storage any) *fosite.Fosite {
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
	).(*fosite.Fosite)
}

// nullStore drops what the authorize endpoint's validation would store.
type nullStore struct{ *sessions.Store }

func (nullStore) CreateAuthorizeCodeSession(context.Context, string, fosite.Requester) error {
	return nil
}

func (nullStore) CreatePKCERequestSession(context.Context, string, fosite.Requester) error {
	return nil
}

func (nullStore) CreateOpenIDConnectSession(context.Context, string, fosite.Requester) error {
	return nil
}
