package oidcidp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"sealion.dev/servers/supervisor/internal/connectors"
)

// revocationTimeout bounds one revocation, discovery included: the garbage collector revokes one
// Secret after the other.
const revocationTimeout = 10 * time.Second

// Revoke revokes the upstream token of a session: its refresh token, or its access token when
// the upstream issued no refresh token. It sends the token only to the issuer that issued it: when
// the OIDCIdentityProvider now points elsewhere, the token is left to expire.
func (c *Connector) Revoke(ctx context.Context, s connectors.Session) (string, error) {
	if s.OIDC == nil || (s.OIDC.UpstreamRefreshToken == "" && s.OIDC.UpstreamAccessToken == "") {
		return "", nil
	}
	if c.cfg.IssuerURL != s.OIDC.UpstreamIssuer {
		klog.FromContext(ctx).V(1).Info("Not revoking an upstream token: its identity provider now has another issuer",
			"issuer", c.cfg.IssuerURL, "tokenIssuer", s.OIDC.UpstreamIssuer)
		return "", nil
	}
	if s.OIDC.UpstreamRefreshToken != "" {
		return c.revokeToken(ctx, s.OIDC.UpstreamRefreshToken, "refresh_token")
	}
	return c.revokeToken(ctx, s.OIDC.UpstreamAccessToken, "access_token")
}

// revokeToken revokes token at the upstream's revocation_endpoint, authenticated as the
// upstream client, and returns hint once it is revoked. An upstream that advertises no
// revocation endpoint has nothing to do.
func (c *Connector) revokeToken(ctx context.Context, token, hint string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, revocationTimeout)
	defer cancel()
	op, err := c.provider(ctx)
	if err != nil {
		return "", err
	}
	var meta struct {
		Endpoint    string   `json:"revocation_endpoint"`
		AuthMethods []string `json:"revocation_endpoint_auth_methods_supported"`
	}
	if err := op.Claims(&meta); err != nil {
		return "", fmt.Errorf("reading the discovery document of %s: %w", c.cfg.IssuerURL, err)
	}
	if meta.Endpoint == "" {
		return "", nil
	}
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	// client_secret_basic is the default of RFC 7009 (and RFC 8414); client_secret_post only
	// when the upstream supports nothing else, or the client has no secret.
	basic := c.cfg.ClientSecret != "" && (len(meta.AuthMethods) == 0 || slices.Contains(meta.AuthMethods, "client_secret_basic") ||
		!slices.Contains(meta.AuthMethods, "client_secret_post"))
	if !basic {
		form.Set("client_id", c.cfg.ClientID)
		if c.cfg.ClientSecret != "" {
			form.Set("client_secret", c.cfg.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, meta.Endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("revoking an upstream %s: %w", hint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(c.cfg.ClientID), url.QueryEscape(c.cfg.ClientSecret))
	}
	client := c.cfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("revoking an upstream %s: %w", hint, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	// RFC 7009: 200 when the token was revoked or was not valid anyway.
	if resp.StatusCode != http.StatusOK {
		var answer struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &answer)
		return "", fmt.Errorf("revoking an upstream %s at %s: %s %s", hint, meta.Endpoint, resp.Status, answer.Error)
	}
	return hint, nil
}
