package oidclogin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// RFC 8693 names.
const (
	grantTypeTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccessToken   = "urn:ietf:params:oauth:token-type:access_token"
	tokenTypeJWT           = "urn:ietf:params:oauth:token-type:jwt"
)

// exchangeForAudience trades the session's access token for an ID token issued to the requested
// audience, as a Pinniped Supervisor does for a cluster's JWTAuthenticator.
func (l *login) exchangeForAudience(ctx context.Context, session *Token) (*Token, error) {
	audience := l.cfg.RequestAudience
	if session.AccessToken == nil || session.AccessToken.Token == "" {
		return nil, fmt.Errorf("the session has no access token to exchange for an ID token with audience %q", audience)
	}
	if err := l.discover(ctx); err != nil {
		return nil, err
	}
	l.logf("exchanging the access token for an ID token with audience %q", audience)
	form := url.Values{
		"client_id":            {l.cfg.ClientID},
		"grant_type":           {grantTypeTokenExchange},
		"audience":             {audience},
		"subject_token":        {session.AccessToken.Token},
		"subject_token_type":   {tokenTypeAccessToken},
		"requested_token_type": {tokenTypeJWT},
	}
	resp, body, err := l.postForm(ctx, l.disc.TokenEndpoint, "the token exchange", form)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("the token exchange for audience %q", audience)
	if resp.StatusCode != http.StatusOK {
		if oauthErr, ok := parseOAuthError(body); ok {
			if ended := sessionEnded(oauthErr.Error, oauthErr.Description); ended != nil {
				return nil, ended
			}
			if oauthErr.Error == "request_unauthorized" {
				// The issuer no longer knows the access token, though it has not expired: its
				// session was ended there (signed out elsewhere, or revoked by an administrator),
				// and its records are gone.
				return nil, &SessionEndedError{Why: "it was ended at the issuer (signed out elsewhere, or revoked)"}
			}
			return nil, fmt.Errorf("%s failed: the issuer answered %s: %s", what, oauthErr.Error, oauthErr.Description)
		}
		return nil, fmt.Errorf("%s failed: the issuer's token endpoint answered %s", what, resp.Status)
	}
	if mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mediaType != "application/json" {
		return nil, fmt.Errorf("%s failed: the answer has content type %q, not application/json", what, mediaType)
	}
	var issued struct {
		AccessToken     string `json:"access_token"`
		IssuedTokenType string `json:"issued_token_type"`
		TokenType       string `json:"token_type"`
	}
	if err := json.Unmarshal(body, &issued); err != nil {
		return nil, fmt.Errorf("%s failed: decoding the answer: %w", what, err)
	}
	if issued.IssuedTokenType != tokenTypeJWT || issued.TokenType != "N_A" {
		return nil, fmt.Errorf("%s failed: the issuer returned a token of type %q (token_type %q), not a JWT (N_A)", what, issued.IssuedTokenType, issued.TokenType)
	}
	id, err := l.verify(ctx, issued.AccessToken, "", audience)
	if err != nil {
		return nil, fmt.Errorf("%s failed: %w", what, err)
	}
	return &Token{IDToken: id}, nil
}

// postForm POSTs form to endpoint, for the request named what (in errors), and returns the
// response with its body (at most 1 MiB), already read and closed.
func (l *login) postForm(ctx context.Context, endpoint, what string, form url.Values) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, nil, fmt.Errorf("building %s request: %w", what, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, nil, explainRequestError(what+" at "+endpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s response: %w", what, err)
	}
	return resp, body, nil
}

// oauthError is an OAuth 2.0 error response (RFC 6749 5.2).
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// parseOAuthError reads body as an OAuth 2.0 error response; ok is false when it is not one.
func parseOAuthError(body []byte) (e oauthError, ok bool) {
	return e, json.Unmarshal(body, &e) == nil && e.Error != ""
}
