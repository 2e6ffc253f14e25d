// Package oidcidp is the connector of OIDCIdentityProviders: users log in at the upstream OpenID
// Connect provider in their browser (the authorization code flow with PKCE and a nonce) or, where
// the identity provider allows it, with the password grant; refreshes redeem the upstream refresh
// token and check that the upstream user is the same, and ending a session revokes that token at
// the upstream (RFC 7009).
package oidcidp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"sealion.dev/servers/supervisor/internal/connectors"
)

// Config is an OIDCIdentityProvider ready to use: its issuer, client and claim mappings.
type Config struct {
	IssuerURL              string
	ClientID, ClientSecret string
	// Scopes are sent besides openid; empty means offline_access, email and profile.
	Scopes []string
	// UsernameClaim names the claim to use as username; empty means "<issuer>?sub=<sub>".
	UsernameClaim string
	// GroupsClaim names the claim holding groups; empty means no groups.
	GroupsClaim string
	// AuthorizeParameters are added to the upstream authorization request (Open refuses names
	// that would replace the Supervisor's own parameters).
	AuthorizeParameters map[string]string
	// AdditionalClaims maps claims of our ID tokens, under the additionalClaims claim, to the
	// upstream ID token's claims they are copied from at login.
	AdditionalClaims map[string]string
	// HTTPClient talks to the issuer (its TLS settings); nil means http.DefaultClient.
	HTTPClient *http.Client
}

// Connector logs users in at one upstream OIDC provider.
type Connector struct {
	cfg  Config
	disc *discovery
}

var (
	_ connectors.BrowserConnector  = (*Connector)(nil)
	_ connectors.PasswordConnector = (*Connector)(nil)
	_ connectors.RefreshConnector  = (*Connector)(nil)
	_ connectors.RevokeConnector   = (*Connector)(nil)
)

// discovery keeps the upstream's discovery document once read; failures are not kept. Open hands
// the same one to the connectors it makes for an unchanged issuer and CA bundle, so that a resync
// of the controller does not make the next login discover again.
type discovery struct {
	mu       sync.Mutex
	provider *oidc.Provider
}

// New returns the connector of cfg. It discovers the issuer at its first use.
func New(cfg Config) *Connector { return &Connector{cfg: cfg, disc: &discovery{}} }

func (c *Connector) context(ctx context.Context) context.Context {
	if c.cfg.HTTPClient == nil {
		return ctx
	}
	return oidc.ClientContext(ctx, c.cfg.HTTPClient)
}

// provider returns the discovered issuer, discovering it unless that succeeded before.
func (c *Connector) provider(ctx context.Context) (*oidc.Provider, error) {
	c.disc.mu.Lock()
	p := c.disc.provider
	c.disc.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := oidc.NewProvider(c.context(ctx), c.cfg.IssuerURL)
	if err != nil {
		return nil, fmt.Errorf("discovering upstream issuer %s: %w", c.cfg.IssuerURL, err)
	}
	c.disc.mu.Lock()
	c.disc.provider = p
	c.disc.mu.Unlock()
	return p, nil
}

// AuthorizeURL sends the browser to the upstream's authorization endpoint.
func (c *Connector) AuthorizeURL(ctx context.Context, login connectors.Login, state string, secrets connectors.BrowserSecrets) (string, error) {
	p, err := c.provider(ctx)
	if err != nil {
		return "", connectors.Unavailable(err)
	}
	return c.oauth2Config(p, login.CallbackURL).AuthCodeURL(state, c.authCodeOptions(secrets.Nonce, secrets.PKCEVerifier)...), nil
}

// Exchange redeems the upstream's code and maps its ID token.
func (c *Connector) Exchange(ctx context.Context, login connectors.Login, code string, secrets connectors.BrowserSecrets) (*connectors.Identity, error) {
	p, err := c.provider(ctx)
	if err != nil {
		return nil, connectors.Unavailable(err)
	}
	tok, err := c.oauth2Config(p, login.CallbackURL).Exchange(c.context(ctx), code, oauth2.VerifierOption(secrets.PKCEVerifier))
	if connectors.Unreachable(err) {
		return nil, connectors.Unavailable(err)
	}
	if err != nil {
		return nil, connectors.Refused("the upstream identity provider refused the authorization code", err)
	}
	id, err := c.validate(ctx, p, tok, secrets.Nonce)
	if err != nil {
		return nil, connectors.Refused(err.Error(), nil)
	}
	return id.connectorIdentity(login, tok.RefreshToken), nil
}

// Authenticate logs in with the resource owner password credentials grant.
func (c *Connector) Authenticate(ctx context.Context, login connectors.Login, username, password string) (*connectors.Identity, error) {
	p, err := c.provider(ctx)
	if err != nil {
		return nil, connectors.Unavailable(err)
	}
	tok, err := c.oauth2Config(p, login.CallbackURL).PasswordCredentialsToken(c.context(ctx), username, password)
	if connectors.Unreachable(err) {
		return nil, connectors.Unavailable(err)
	}
	if err != nil {
		return nil, connectors.Refused("Username/password not accepted by the upstream OIDC provider.", err)
	}
	id, err := c.validate(ctx, p, tok, "")
	if err != nil {
		return nil, connectors.Refused(err.Error(), nil)
	}
	return id.connectorIdentity(login, tok.RefreshToken), nil
}

// Refresh redeems the upstream refresh token and, when the upstream sends a new ID token, checks
// that it is the same upstream user and takes the groups it has.
func (c *Connector) Refresh(ctx context.Context, login connectors.Login, prev connectors.Identity) (*connectors.Identity, error) {
	s := prev.Session.OIDC
	if s == nil || s.UpstreamRefreshToken == "" {
		return nil, connectors.Refused("the session holds no upstream refresh token", nil)
	}
	p, err := c.provider(ctx)
	if err != nil {
		return nil, connectors.Unavailable(err)
	}
	tok, err := c.oauth2Config(p, login.CallbackURL).TokenSource(c.context(ctx), &oauth2.Token{RefreshToken: s.UpstreamRefreshToken}).Token()
	if connectors.Unreachable(err) {
		// The session stays valid: the upstream refused nothing.
		return nil, connectors.Unavailable(err)
	}
	if err != nil {
		return nil, connectors.Refused("the upstream identity provider refused the refresh token", err)
	}
	now := prev
	now.Session = prev.Session.Clone()
	if tok.RefreshToken != "" {
		now.Session.OIDC.UpstreamRefreshToken = tok.RefreshToken
	}
	if _, ok := tok.Extra("id_token").(string); ok {
		id, err := c.validate(ctx, p, tok, "")
		if err != nil {
			return nil, connectors.Refused(err.Error(), nil)
		}
		if id.Issuer != s.UpstreamIssuer || id.Subject != s.UpstreamSubject {
			return nil, connectors.Refused("the upstream identity changed since the login", nil)
		}
		now.Username = id.Username
		if id.Groups != nil {
			now.Groups = id.Groups
		}
	}
	return &now, nil
}

// identity is what an upstream ID token says about a user.
type identity struct {
	Issuer, Subject string
	Username        string
	Groups          []string
	// AdditionalClaims are the values of Config.AdditionalClaims the token has.
	AdditionalClaims map[string]any
}

// connectorIdentity is the user of an upstream login that returned refreshToken. The subject
// names the identity provider, so that one upstream user behind two identity providers is two
// downstream users.
func (id *identity) connectorIdentity(login connectors.Login, refreshToken string) *connectors.Identity {
	return &connectors.Identity{
		Subject:          fmt.Sprintf("%s?idpName=%s&sub=%s", id.Issuer, url.QueryEscape(login.IDPName), url.QueryEscape(id.Subject)),
		Username:         id.Username,
		Groups:           id.Groups,
		AdditionalClaims: id.AdditionalClaims,
		Session: connectors.Session{OIDC: &connectors.OIDCSession{
			UpstreamIssuer: id.Issuer, UpstreamSubject: id.Subject, UpstreamRefreshToken: refreshToken,
		}},
	}
}

// oauth2Config is the upstream client, redirecting back to the issuer's callback endpoint.
func (c *Connector) oauth2Config(p *oidc.Provider, callbackURL string) *oauth2.Config {
	scopes := c.cfg.Scopes
	if len(scopes) == 0 {
		scopes = []string{"offline_access", "email", "profile"}
	}
	return &oauth2.Config{
		ClientID:     c.cfg.ClientID,
		ClientSecret: c.cfg.ClientSecret,
		Endpoint:     p.Endpoint(),
		RedirectURL:  callbackURL,
		Scopes:       append([]string{oidc.ScopeOpenID}, scopes...),
	}
}

// validate verifies the ID token in tok (and its nonce, when nonce is set) and maps its claims.
func (c *Connector) validate(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, nonce string) (*identity, error) {
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return nil, errors.New("the upstream token response has no id_token")
	}
	idToken, err := p.Verifier(&oidc.Config{ClientID: c.cfg.ClientID}).Verify(c.context(ctx), raw)
	if err != nil {
		return nil, fmt.Errorf("verifying the upstream ID token: %w", err)
	}
	if nonce != "" && idToken.Nonce != nonce {
		return nil, errors.New("the upstream ID token has the wrong nonce")
	}
	var claims map[string]any
	if err := idToken.Claims(&claims); err != nil {
		return nil, fmt.Errorf("reading the upstream ID token claims: %w", err)
	}
	id := &identity{Issuer: idToken.Issuer, Subject: idToken.Subject}
	if id.Username, err = c.username(claims, idToken); err != nil {
		return nil, err
	}
	if id.Groups, err = c.groups(claims); err != nil {
		return nil, err
	}
	for ours, theirs := range c.cfg.AdditionalClaims {
		if v, ok := claims[theirs]; ok {
			if id.AdditionalClaims == nil {
				id.AdditionalClaims = map[string]any{}
			}
			id.AdditionalClaims[ours] = v
		}
	}
	return id, nil
}

// authCodeOptions are the upstream authorization request's parameters besides the client's.
func (c *Connector) authCodeOptions(nonce, pkceVerifier string) []oauth2.AuthCodeOption {
	opts := []oauth2.AuthCodeOption{oidc.Nonce(nonce), oauth2.S256ChallengeOption(pkceVerifier)}
	for name, value := range c.cfg.AuthorizeParameters {
		opts = append(opts, oauth2.SetAuthURLParam(name, value))
	}
	return opts
}

func (c *Connector) username(claims map[string]any, tok *oidc.IDToken) (string, error) {
	if c.cfg.UsernameClaim == "" {
		return tok.Issuer + "?sub=" + url.QueryEscape(tok.Subject), nil
	}
	v, ok := claims[c.cfg.UsernameClaim].(string)
	if !ok || v == "" {
		return "", fmt.Errorf("the upstream ID token has no string claim %q for the username", c.cfg.UsernameClaim)
	}
	if c.cfg.UsernameClaim == "email" {
		if verified, present := claims["email_verified"]; present && verified != true {
			return "", errors.New("the upstream ID token's email is not verified (email_verified is not true)")
		}
	}
	return v, nil
}

func (c *Connector) groups(claims map[string]any) ([]string, error) {
	if c.cfg.GroupsClaim == "" {
		return nil, nil
	}
	switch v := claims[c.cfg.GroupsClaim].(type) {
	case nil:
		return []string{}, nil
	case string:
		return []string{v}, nil
	case []any:
		groups := make([]string, 0, len(v))
		for _, g := range v {
			s, ok := g.(string)
			if !ok {
				return nil, fmt.Errorf("the upstream groups claim %q holds a non-string value", c.cfg.GroupsClaim)
			}
			groups = append(groups, s)
		}
		return groups, nil
	default:
		return nil, fmt.Errorf("the upstream groups claim %q is neither a string nor a list of strings", c.cfg.GroupsClaim)
	}
}
