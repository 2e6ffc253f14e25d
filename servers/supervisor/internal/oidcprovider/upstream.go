package oidcprovider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Upstream is an OIDCIdentityProvider ready to use: its issuer, client and claim mappings.
type Upstream struct {
	IssuerURL              string
	ClientID, ClientSecret string
	// Scopes are sent besides openid; empty means offline_access, email and profile.
	Scopes []string
	// UsernameClaim names the claim to use as username; empty means "<issuer>?sub=<sub>".
	UsernameClaim string
	// GroupsClaim names the claim holding groups; empty means no groups.
	GroupsClaim string
	// AuthorizeParameters are added to the upstream authorization request (the controller
	// refuses names that would replace the Supervisor's own parameters).
	AuthorizeParameters map[string]string
	// AdditionalClaims maps claims of our ID tokens, under the additionalClaims claim, to the
	// upstream ID token's claims they are copied from at login.
	AdditionalClaims map[string]string
	// HTTPClient talks to the issuer (its TLS settings); nil means http.DefaultClient.
	HTTPClient *http.Client
}

// identity is what an upstream ID token says about a user.
type identity struct {
	Issuer, Subject string
	Username        string
	Groups          []string
	// AdditionalClaims are the values of Upstream.AdditionalClaims the token has.
	AdditionalClaims map[string]any
}

func (u *Upstream) context(ctx context.Context) context.Context {
	if u.HTTPClient == nil {
		return ctx
	}
	return oidc.ClientContext(ctx, u.HTTPClient)
}

// discoveryKey identifies a discovered upstream: the same issuer reached with other TLS settings
// is discovered again.
type discoveryKey struct {
	issuer string
	client *http.Client
}

// oidcProvider discovers the upstream issuer once and caches the result; failures are not cached.
func (e *Endpoints) oidcProvider(ctx context.Context, u *Upstream) (*oidc.Provider, error) {
	key := discoveryKey{u.IssuerURL, u.HTTPClient}
	e.mu.Lock()
	p, ok := e.discovery[key]
	e.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := oidc.NewProvider(u.context(ctx), u.IssuerURL)
	if err != nil {
		return nil, fmt.Errorf("discovering upstream issuer %s: %w", u.IssuerURL, err)
	}
	e.mu.Lock()
	e.discovery[key] = p
	e.mu.Unlock()
	return p, nil
}

// oauth2Config is the upstream client, redirecting back to the issuer's callback endpoint.
func (u *Upstream) oauth2Config(p *oidc.Provider, callbackURL string) *oauth2.Config {
	scopes := u.Scopes
	if len(scopes) == 0 {
		scopes = []string{"offline_access", "email", "profile"}
	}
	return &oauth2.Config{
		ClientID:     u.ClientID,
		ClientSecret: u.ClientSecret,
		Endpoint:     p.Endpoint(),
		RedirectURL:  callbackURL,
		Scopes:       append([]string{oidc.ScopeOpenID}, scopes...),
	}
}

// validate verifies the ID token in tok (and its nonce, when nonce is set) and maps its claims.
func (u *Upstream) validate(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, nonce string) (*identity, error) {
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return nil, errors.New("the upstream token response has no id_token")
	}
	idToken, err := p.Verifier(&oidc.Config{ClientID: u.ClientID}).Verify(u.context(ctx), raw)
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
	if id.Username, err = u.username(claims, idToken); err != nil {
		return nil, err
	}
	if id.Groups, err = u.groups(claims); err != nil {
		return nil, err
	}
	for ours, theirs := range u.AdditionalClaims {
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
func (u *Upstream) authCodeOptions(nonce, pkceVerifier string) []oauth2.AuthCodeOption {
	opts := []oauth2.AuthCodeOption{oidc.Nonce(nonce), oauth2.S256ChallengeOption(pkceVerifier)}
	for name, value := range u.AuthorizeParameters {
		opts = append(opts, oauth2.SetAuthURLParam(name, value))
	}
	return opts
}

func (u *Upstream) username(claims map[string]any, tok *oidc.IDToken) (string, error) {
	if u.UsernameClaim == "" {
		return tok.Issuer + "?sub=" + url.QueryEscape(tok.Subject), nil
	}
	v, ok := claims[u.UsernameClaim].(string)
	if !ok || v == "" {
		return "", fmt.Errorf("the upstream ID token has no string claim %q for the username", u.UsernameClaim)
	}
	if u.UsernameClaim == "email" {
		if verified, present := claims["email_verified"]; present && verified != true {
			return "", errors.New("the upstream ID token's email is not verified (email_verified is not true)")
		}
	}
	return v, nil
}

func (u *Upstream) groups(claims map[string]any) ([]string, error) {
	if u.GroupsClaim == "" {
		return nil, nil
	}
	switch v := claims[u.GroupsClaim].(type) {
	case nil:
		return []string{}, nil
	case string:
		return []string{v}, nil
	case []any:
		groups := make([]string, 0, len(v))
		for _, g := range v {
			s, ok := g.(string)
			if !ok {
				return nil, fmt.Errorf("the upstream groups claim %q holds a non-string value", u.GroupsClaim)
			}
			groups = append(groups, s)
		}
		return groups, nil
	default:
		return nil, fmt.Errorf("the upstream groups claim %q is neither a string nor a list of strings", u.GroupsClaim)
	}
}
