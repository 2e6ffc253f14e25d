package oidclogin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/coreos/go-oidc/v3/oidc"
)

// ErrNoRevocationEndpoint is the error of a logout at an issuer that offers no revocation endpoint
// (RFC 7009; a Pinniped Supervisor has none, ours has): the session was removed from the cache,
// but the issuer keeps it until it expires.
var ErrNoRevocationEndpoint = errors.New("the issuer offers no revocation endpoint: the session was removed from this machine only, and the issuer keeps it until it expires")

// Logout ends the session that logins with cfg keep in cfg.SessionCache: it is removed from the
// cache, and its refresh token (or, without one, its access token) is revoked at the issuer's
// revocation endpoint, which ends the session there. It reports whether the cache held one.
func Logout(ctx context.Context, cfg Config) (bool, error) {
	if cfg.SessionCache == nil {
		return false, errors.New("a session cache is required to log out")
	}
	l, err := newLogin(cfg)
	if err != nil {
		return false, err
	}
	key := l.sessionKey()
	cached := cfg.SessionCache.GetToken(key)
	if cached == nil {
		return false, nil
	}
	// Removed whatever the issuer answers: the user asked that this machine hold it no more.
	cfg.SessionCache.PutToken(key, nil)
	token, hint := "", ""
	switch {
	case cached.RefreshToken != nil && cached.RefreshToken.Token != "":
		token, hint = cached.RefreshToken.Token, "refresh_token"
	case cached.AccessToken != nil && cached.AccessToken.Token != "":
		token, hint = cached.AccessToken.Token, "access_token"
	default:
		return true, nil // nothing the issuer could revoke
	}
	ctx, cancel := context.WithTimeout(ctx, HTTPTimeout)
	defer cancel()
	if err := l.discover(oidc.ClientContext(ctx, l.client)); err != nil {
		return true, err
	}
	if l.disc.RevocationEndpoint == "" {
		return true, ErrNoRevocationEndpoint
	}
	return true, l.revoke(ctx, token, hint)
}

// revoke revokes token at the issuer's revocation endpoint, as the public client cfg.ClientID.
func (l *login) revoke(ctx context.Context, token, hint string) error {
	l.logf("revoking the session's %s at %s", hint, l.disc.RevocationEndpoint)
	form := url.Values{"token": {token}, "token_type_hint": {hint}, "client_id": {l.cfg.ClientID}}
	resp, body, err := l.postForm(ctx, l.disc.RevocationEndpoint, "the revocation", form)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	if oauthErr, ok := parseOAuthError(body); ok {
		return fmt.Errorf("the issuer did not revoke the session: %s: %s", oauthErr.Error, oauthErr.Description)
	}
	return fmt.Errorf("the issuer did not revoke the session: its revocation endpoint answered %s", resp.Status)
}
