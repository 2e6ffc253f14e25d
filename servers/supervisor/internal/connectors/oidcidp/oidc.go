// Package oidcidp is the connector of OIDCIdentityProviders: users log in at the upstream OpenID
// Connect provider in their browser (the authorization code flow with PKCE and a nonce) or, where
// the identity provider allows it, with the password grant. As Pinniped does, the claims of the
// upstream ID token are merged with those of the upstream's userinfo endpoint, when it has one,
// so that providers which put groups only there (Okta, Azure AD) work. Refreshes redeem the
// upstream refresh token, or, from upstreams that issue none, re-read the userinfo endpoint with
// the stored access token, and check that the upstream user is the same; ending a session revokes
// that token at the upstream (RFC 7009).
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
	// IgnoreUserInfo treats the upstream as if it had no userinfo endpoint (the Supervisor's
	// oidc.ignoreUserInfoEndpoint setting, for upstreams such as ADFS whose endpoint refuses the
	// refreshed access tokens).
	IgnoreUserInfo bool
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
	return c.login(ctx, p, login, tok, secrets.Nonce)
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
	return c.login(ctx, p, login, tok, "")
}

// login maps the upstream's answer to a login: its ID token (checked against nonce when set)
// merged with its userinfo, and the upstream token later refreshes use. That is the refresh
// token; from an upstream that issues none, the access token, which refreshes present to the
// userinfo endpoint, so that an upstream without one cannot be used.
func (c *Connector) login(ctx context.Context, p *oidc.Provider, login connectors.Login, tok *oauth2.Token, nonce string) (*connectors.Identity, error) {
	claims, err := c.claims(ctx, p, tok, nonce, true, false)
	if err != nil {
		return nil, connectors.Refused(err.Error(), nil)
	}
	id, err := c.identity(claims)
	if err != nil {
		return nil, connectors.Refused(err.Error(), nil)
	}
	session := &connectors.OIDCSession{UpstreamIssuer: id.Issuer, UpstreamSubject: id.Subject}
	switch {
	case tok.RefreshToken != "":
		session.UpstreamRefreshToken = tok.RefreshToken
	case tok.AccessToken != "" && c.userInfoURL(p) == "":
		return nil, connectors.Refused("access token was returned by upstream provider but there was no userinfo endpoint", nil)
	case tok.AccessToken != "":
		session.UpstreamAccessToken = tok.AccessToken
	default:
		return nil, connectors.Refused("neither access token nor refresh token returned by upstream provider", nil)
	}
	return id.connectorIdentity(login, session), nil
}

// Refresh checks the session's user at the upstream: it redeems the stored refresh token, or
// presents the stored access token to the userinfo endpoint, and checks that the ID token and
// userinfo it gets, when it gets any, are of the same upstream user. Their username and groups
// claims, when present, are the user's now; an absent claim keeps the login's value.
func (c *Connector) Refresh(ctx context.Context, login connectors.Login, prev connectors.Identity) (*connectors.Identity, error) {
	s := prev.Session.OIDC
	if s == nil || (s.UpstreamRefreshToken == "") == (s.UpstreamAccessToken == "") {
		return nil, connectors.Refused("the session holds no upstream refresh or access token", nil)
	}
	p, err := c.provider(ctx)
	if err != nil {
		return nil, connectors.Unavailable(err)
	}
	tok := &oauth2.Token{AccessToken: s.UpstreamAccessToken}
	if s.UpstreamRefreshToken != "" {
		tok, err = c.oauth2Config(p, login.CallbackURL).TokenSource(c.context(ctx), &oauth2.Token{RefreshToken: s.UpstreamRefreshToken}).Token()
		if connectors.Unreachable(err) {
			// The session stays valid: the upstream refused nothing.
			return nil, connectors.Unavailable(err)
		}
		if err != nil {
			return nil, connectors.Refused("the upstream identity provider refused the refresh token", err)
		}
	}
	_, hasIDToken := tok.Extra("id_token").(string)
	// A refreshed ID token may lack a nonce (providers differ), so none is checked. A stored
	// access token is the only proof the user may still log in, so the userinfo answer is required.
	claims, err := c.claims(ctx, p, tok, "", hasIDToken, s.UpstreamAccessToken != "")
	if connectors.Unreachable(err) {
		return nil, connectors.Unavailable(err)
	}
	if err != nil {
		return nil, connectors.Refused("the upstream returned an invalid ID token or userinfo response", err)
	}
	now := prev
	now.Session = prev.Session.Clone()
	if tok.RefreshToken != "" && s.UpstreamRefreshToken != "" {
		now.Session.OIDC.UpstreamRefreshToken = tok.RefreshToken
	}
	if len(claims) == 0 {
		// Neither an ID token nor a userinfo endpoint: the redeemed refresh token is all there is.
		return &now, nil
	}
	if sub, _ := claims["sub"].(string); sub != s.UpstreamSubject {
		return nil, connectors.Refused("the upstream identity changed since the login", nil)
	}
	if iss, ok := claims["iss"].(string); ok && iss != s.UpstreamIssuer {
		return nil, connectors.Refused("the upstream identity changed since the login", nil)
	}
	if claims["iss"] == nil {
		// The username default names the issuer; the login's is the one to use.
		claims["iss"] = s.UpstreamIssuer
	}
	if username, err := c.username(claims); err == nil {
		now.Username = username
	}
	if _, ok := claims[c.cfg.GroupsClaim]; ok && c.cfg.GroupsClaim != "" {
		if now.Groups, err = c.groups(claims); err != nil {
			return nil, connectors.Refused(err.Error(), nil)
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

// connectorIdentity is the user of an upstream login, with the session that refreshes it. The
// subject names the identity provider, so that one upstream user behind two identity providers
// is two downstream users.
func (id *identity) connectorIdentity(login connectors.Login, session *connectors.OIDCSession) *connectors.Identity {
	return &connectors.Identity{
		Subject:          fmt.Sprintf("%s?idpName=%s&sub=%s", id.Issuer, url.QueryEscape(login.IDPName), url.QueryEscape(id.Subject)),
		Username:         id.Username,
		Groups:           id.Groups,
		AdditionalClaims: id.AdditionalClaims,
		Session:          connectors.Session{OIDC: session},
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

// claims verifies the ID token of tok, when it has one (it must when requireIDToken), against
// its at_hash and, when set, nonce, and merges in the claims of the userinfo endpoint (required
// when requireUserInfo). Userinfo claims win, except iss: only the ID token's is signed. A
// userinfo answer about another subject than the ID token's is refused (OpenID Connect Core
// 5.3.2). The claims are empty when there was neither.
func (c *Connector) claims(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, nonce string, requireIDToken, requireUserInfo bool) (map[string]any, error) {
	claims := map[string]any{}
	raw, hasIDToken := tok.Extra("id_token").(string)
	if requireIDToken && (!hasIDToken || raw == "") {
		return nil, errors.New("the upstream token response has no id_token")
	}
	if hasIDToken {
		idToken, err := p.Verifier(&oidc.Config{ClientID: c.cfg.ClientID}).Verify(c.context(ctx), raw)
		if err != nil {
			return nil, fmt.Errorf("verifying the upstream ID token: %w", err)
		}
		if idToken.AccessTokenHash != "" {
			if err := idToken.VerifyAccessToken(tok.AccessToken); err != nil {
				return nil, fmt.Errorf("verifying the upstream ID token: %w", err)
			}
		}
		if nonce != "" && idToken.Nonce != nonce {
			return nil, errors.New("the upstream ID token has the wrong nonce")
		}
		if err := idToken.Claims(&claims); err != nil {
			return nil, fmt.Errorf("reading the upstream ID token claims: %w", err)
		}
	}
	if c.userInfoURL(p) == "" {
		if requireUserInfo {
			return nil, errors.New("userinfo endpoint not found, but is required")
		}
		return claims, nil
	}
	info, err := p.UserInfo(c.context(ctx), oauth2.StaticTokenSource(tok))
	if err != nil {
		return nil, fmt.Errorf("could not fetch user info claims: could not get user info: %w", err)
	}
	idTokenSubject, _ := claims["sub"].(string)
	if hasIDToken && (info.Subject == "" || info.Subject != idTokenSubject) {
		return nil, fmt.Errorf("could not fetch user info claims: userinfo 'sub' claim (%s) did not match id_token 'sub' claim (%s)", info.Subject, idTokenSubject)
	}
	issuer, hasIssuer := claims["iss"]
	if err := info.Claims(&claims); err != nil {
		return nil, fmt.Errorf("could not fetch user info claims: could not unmarshal user info claims: %w", err)
	}
	delete(claims, "iss")
	if hasIssuer {
		claims["iss"] = issuer
	}
	return claims, nil
}

// userInfoURL is the upstream's userinfo endpoint, or "" when it has none or is configured to be
// treated as having none.
func (c *Connector) userInfoURL(p *oidc.Provider) string {
	if c.cfg.IgnoreUserInfo {
		return ""
	}
	return p.UserInfoEndpoint()
}

// identity maps the claims of a login.
func (c *Connector) identity(claims map[string]any) (*identity, error) {
	id := &identity{}
	id.Issuer, _ = claims["iss"].(string)
	id.Subject, _ = claims["sub"].(string)
	var err error
	if id.Username, err = c.username(claims); err != nil {
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

func (c *Connector) username(claims map[string]any) (string, error) {
	if c.cfg.UsernameClaim == "" {
		iss, _ := claims["iss"].(string)
		sub, _ := claims["sub"].(string)
		if sub == "" {
			return "", errors.New("the upstream ID token has no sub claim")
		}
		return iss + "?sub=" + url.QueryEscape(sub), nil
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
