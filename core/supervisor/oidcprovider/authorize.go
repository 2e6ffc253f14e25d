package oidcprovider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/ory/fosite"
	"github.com/ory/fosite/token/jwt"
	"golang.org/x/oauth2"

	"sealion.dev/core/supervisor/idtransform"
	"sealion.dev/core/supervisor/issuer"
)

// authorize validates a downstream authorize request and sends the browser to the upstream
// identity provider. Nothing is stored: the request travels in the sealed upstream state.
func (p *provider) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ar, err := p.oauth.NewAuthorizeRequest(ctx, r)
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	if slices.Contains(strings.Fields(ar.GetRequestForm().Get("prompt")), "none") {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrLoginRequired.WithHint("prompt=none is not supported: the user must log in"))
		return
	}
	grantScopes(ar)
	// The user is not known yet; fosite's OpenID Connect checks only need some subject.
	pending := newSession()
	pending.Claims.Subject = "pending-login"
	if _, err := p.validate.NewAuthorizeResponse(ctx, ar, pending); err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	idp, up, err := p.identityProvider(ar.GetRequestForm().Get("pinniped_idp_name"))
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrInvalidRequest.WithHint(err.Error()))
		return
	}
	op, err := p.oidcProvider(ctx, up)
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrTemporarilyUnavailable.WithHint("the upstream identity provider is unreachable").WithWrap(err))
		return
	}
	csrf := ""
	if c, err := r.Cookie(csrfCookie); err == nil && c.Value != "" {
		csrf = c.Value
	}
	st := upstreamState{Version: stateVersion, Params: ar.GetRequestForm().Encode(), IDP: idp.DisplayName, IssuedAt: p.now().UTC()}
	for _, s := range []*string{&st.Nonce, &st.PKCEVerifier, &csrf} {
		if *s == "" {
			if *s, err = randomString(32); err != nil {
				p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
				return
			}
		}
	}
	st.CSRF = csrf
	state, err := p.state.encode(st)
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: csrfCookie, Value: csrf, Path: "/", Secure: true, HttpOnly: true,
		SameSite: http.SameSiteNoneMode, MaxAge: int(csrfCookieLifetime.Seconds()),
	})
	cfg := up.oauth2Config(op, p.iss.Endpoint(CallbackPath))
	http.Redirect(w, r, cfg.AuthCodeURL(state, oidc.Nonce(st.Nonce), oauth2.S256ChallengeOption(st.PKCEVerifier)), http.StatusSeeOther)
}

// callback finishes a login: it redeems the upstream code, maps and transforms the identity and
// answers the downstream authorize request with our own authorization code.
func (p *provider) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	st, err := p.state.decode(q.Get("state"), p.now())
	if err != nil {
		http.Error(w, "bad state: "+err.Error(), http.StatusBadRequest)
		return
	}
	if c, err := r.Cookie(csrfCookie); err != nil || c.Value != st.CSRF {
		http.Error(w, "CSRF cookie is missing or does not match the state: start the login again in the same browser", http.StatusForbidden)
		return
	}
	// Replay the downstream authorize request; fosite validates it again, as it would have
	// changed meaning if the client's registration had.
	down := r.Clone(ctx)
	down.Method = http.MethodGet
	down.URL = &url.URL{Path: p.iss.Path(AuthorizePath), RawQuery: st.Params}
	down.Form, down.PostForm, down.Body = nil, nil, http.NoBody
	ar, err := p.oauth.NewAuthorizeRequest(ctx, down)
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	if e := q.Get("error"); e != "" {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHintf("the upstream identity provider answered %s: %s", e, q.Get("error_description")))
		return
	}
	idp, up, err := p.identityProvider(st.IDP)
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint(err.Error()))
		return
	}
	op, err := p.oidcProvider(ctx, up)
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrTemporarilyUnavailable.WithWrap(err))
		return
	}
	tok, err := up.oauth2Config(op, p.iss.Endpoint(CallbackPath)).Exchange(up.context(ctx), q.Get("code"), oauth2.VerifierOption(st.PKCEVerifier))
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint("the upstream identity provider refused the authorization code").WithWrap(err))
		return
	}
	id, err := up.validate(ctx, op, tok, st.Nonce)
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint(err.Error()))
		return
	}
	downstream, err := transform(ctx, idp, id)
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint(err.Error()))
		return
	}
	grantScopes(ar)
	session := p.newLoginSession(idp, id, downstream, tok.RefreshToken)
	resp, err := p.oauth.NewAuthorizeResponse(ctx, ar, session)
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, err)
		return
	}
	p.oauth.WriteAuthorizeResponse(ctx, w, ar, resp)
}

// grantScopes grants the requested scopes the Supervisor knows; others (profile, email) are
// accepted but not granted.
func grantScopes(ar fosite.AuthorizeRequester) {
	for _, scope := range []string{ScopeOpenID, ScopeOfflineAccess, ScopeRequestAudience, ScopeUsername, ScopeGroups} {
		if ar.GetRequestedScopes().Has(scope) {
			ar.GrantScope(scope)
		}
	}
}

// transform runs the identity provider's identity transformations.
func transform(ctx context.Context, idp *issuer.IdentityProvider, id *identity) (idtransform.Identity, error) {
	res, err := idp.Transforms.Evaluate(ctx, idtransform.Identity{Username: id.Username, Groups: id.Groups})
	if err != nil {
		return idtransform.Identity{}, fmt.Errorf("identity transformations failed: %w", err)
	}
	if res.Rejected {
		return idtransform.Identity{}, errors.New(res.Message)
	}
	return res.Identity, nil
}

// newLoginSession is the session of a fresh login.
func (p *provider) newLoginSession(idp *issuer.IdentityProvider, id *identity, downstream idtransform.Identity, upstreamRefreshToken string) *Session {
	s := newSession()
	now := p.now().UTC()
	s.Custom = CustomSessionData{
		ProviderName: idp.DisplayName, ProviderResource: idp.Name, ProviderUID: string(idp.UID), ProviderType: string(idp.Type),
		UpstreamUsername: id.Username, UpstreamGroups: id.Groups,
		LoginTime: now,
		OIDC:      &OIDCSessionData{UpstreamIssuer: id.Issuer, UpstreamSubject: id.Subject, UpstreamRefreshToken: upstreamRefreshToken},
	}
	s.Subject = fmt.Sprintf("%s?idpName=%s&sub=%s", id.Issuer, url.QueryEscape(idp.DisplayName), url.QueryEscape(id.Subject))
	s.Username = downstream.Username
	s.Claims = &jwt.IDTokenClaims{Subject: s.Subject, RequestedAt: now, AuthTime: now}
	s.Headers = &jwt.Headers{Extra: map[string]any{"kid": p.keyID}}
	p.setIdentity(s, downstream)
	s.SetExpiresAt(fosite.RefreshToken, now.Add(SessionLifetime))
	return s
}

// setIdentity records the downstream identity in the session and its ID token claims. The
// pinniped-cli client always gets username and groups, whatever scopes it asked for.
func (p *provider) setIdentity(s *Session, id idtransform.Identity) {
	groups := id.Groups
	if groups == nil {
		groups = []string{}
	}
	s.Custom.Username, s.Custom.Groups = id.Username, groups
	if s.Claims.Extra == nil {
		s.Claims.Extra = map[string]any{}
	}
	s.Claims.Extra["username"] = id.Username
	s.Claims.Extra["groups"] = groups
}
