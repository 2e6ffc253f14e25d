package oidcprovider

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ory/fosite"
	"github.com/ory/fosite/token/jwt"
	"k8s.io/klog/v2"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/idtransform"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// Headers on which the CLI sends the user's credentials in the cli_password flow.
const (
	usernameHeader = "Pinniped-Username"
	passwordHeader = "Pinniped-Password"
)

// authorize validates a downstream authorize request and starts the login: it sends the browser
// to the identity provider chooser, the upstream OIDC provider, GitHub or the LDAP/AD login form;
// a request carrying credentials headers is answered at once (authorizeWithoutBrowser). Nothing
// is stored: the request travels in the sealed upstream state.
func (p *provider) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	browserless := len(r.Header.Values(usernameHeader)) > 0 || len(r.Header.Values(passwordHeader)) > 0
	ar, err := p.oauth.NewAuthorizeRequest(ctx, r)
	if err != nil {
		p.authorizeError(ctx, w, ar, err, browserless)
		return
	}
	if slices.Contains(strings.Fields(ar.GetRequestForm().Get("prompt")), "none") {
		p.authorizeError(ctx, w, ar, fosite.ErrLoginRequired.WithHint("prompt=none is not supported: the user must log in"), browserless)
		return
	}
	if err := p.validateAuthorize(ctx, ar); err != nil {
		p.authorizeError(ctx, w, ar, err, browserless)
		return
	}
	form := ar.GetRequestForm()
	if !browserless && form.Get("pinniped_idp_name") == "" && len(p.iss.IdentityProviders) > 1 {
		chooser := url.URL{Path: p.iss.Path(ChooseIdentityProviderPath), RawQuery: form.Encode()}
		http.Redirect(w, r, chooser.String(), http.StatusSeeOther)
		return
	}
	res, err := p.identityProvider(form.Get("pinniped_idp_name"), form.Get("pinniped_idp_type"))
	if err != nil {
		p.authorizeError(ctx, w, ar, fosite.ErrInvalidRequest.WithHint(err.Error()), browserless)
		return
	}
	if browserless {
		p.authorizeWithoutBrowser(w, r, ar, res)
		return
	}
	st, err := p.newState(w, r, form, res.idp)
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	state, err := p.state.encode(*st)
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	if browser, ok := res.conn.(connectors.BrowserConnector); ok {
		to, err := browser.AuthorizeURL(ctx, p.connectorLogin(res), state, connectors.BrowserSecrets{Nonce: st.Nonce, PKCEVerifier: st.PKCEVerifier})
		if err != nil {
			p.oauth.WriteAuthorizeError(ctx, w, ar, loginError(ctx, res, err))
			return
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	// Without a browser flow of its own, the upstream checks the password of the Supervisor's
	// login form.
	login := url.URL{Path: p.iss.Path(LoginPath), RawQuery: url.Values{"state": {state}}.Encode()}
	http.Redirect(w, r, login.String(), http.StatusSeeOther)
}

// validateAuthorize runs every check of the final authorize response, with storage that keeps
// nothing: the login has not happened yet.
func (p *provider) validateAuthorize(ctx context.Context, ar fosite.AuthorizeRequester) error {
	grantScopes(ar)
	// The user is not known yet; fosite's OpenID Connect checks only need some subject.
	pending := newSession()
	pending.Claims.Subject = "pending-login"
	_, err := p.validate.NewAuthorizeResponse(ctx, ar, pending)
	return err
}

// authorizeError answers an authorize request with an error, as a redirect to the client when
// its redirect URI is valid. The CLI's password flow reads the redirect without following it,
// and gets 302 Found rather than fosite's 303 See Other.
func (p *provider) authorizeError(ctx context.Context, w http.ResponseWriter, ar fosite.AuthorizeRequester, err error, browserless bool) {
	if browserless {
		w = foundRedirects{w}
	}
	setFormPostHeaders(w, ar)
	p.oauth.WriteAuthorizeError(ctx, w, ar, err)
}

// foundRedirects turns 303 See Other into 302 Found.
type foundRedirects struct{ http.ResponseWriter }

func (w foundRedirects) WriteHeader(code int) {
	if code == http.StatusSeeOther {
		code = http.StatusFound
	}
	w.ResponseWriter.WriteHeader(code)
}

// newState starts the upstream state of a browser login and binds it to the browser with the
// CSRF cookie (whose value is kept when the browser has one).
func (p *provider) newState(w http.ResponseWriter, r *http.Request, form url.Values, idp *issuer.IdentityProvider) (*upstreamState, error) {
	csrf := ""
	if c, err := r.Cookie(csrfCookie); err == nil && c.Value != "" {
		csrf = c.Value
	}
	st := &upstreamState{Version: stateVersion, Params: form.Encode(), IDP: idp.DisplayName, IssuedAt: p.now().UTC()}
	for _, s := range []*string{&st.Nonce, &st.PKCEVerifier, &csrf} {
		if *s == "" {
			var err error
			if *s, err = randomString(32); err != nil {
				return nil, err
			}
		}
	}
	st.CSRF = csrf
	http.SetCookie(w, &http.Cookie{
		Name: csrfCookie, Value: csrf, Path: "/", Secure: true, HttpOnly: true,
		SameSite: http.SameSiteNoneMode, MaxAge: int(csrfCookieLifetime.Seconds()),
	})
	return st, nil
}

// resumeState reads the sealed state of a browser login, checks that this browser started it,
// and replays the downstream authorize request it carries. On failure it has answered.
func (p *provider) resumeState(w http.ResponseWriter, r *http.Request, encoded string) (*upstreamState, fosite.AuthorizeRequester, bool) {
	ctx := r.Context()
	st, err := p.state.decode(encoded, p.now())
	if err != nil {
		http.Error(w, "bad state: "+err.Error(), http.StatusBadRequest)
		return nil, nil, false
	}
	if c, err := r.Cookie(csrfCookie); err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(st.CSRF)) != 1 {
		http.Error(w, "CSRF cookie is missing or does not match the state: start the login again in the same browser", http.StatusForbidden)
		return nil, nil, false
	}
	// fosite validates the request again, as it would have changed meaning if the client's
	// registration had.
	down := r.Clone(ctx)
	down.Method = http.MethodGet
	down.URL = &url.URL{Path: p.iss.Path(AuthorizePath), RawQuery: st.Params}
	down.Form, down.PostForm, down.Body = nil, nil, http.NoBody
	ar, err := p.oauth.NewAuthorizeRequest(ctx, down)
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, err)
		return nil, nil, false
	}
	return st, ar, true
}

// callback finishes a login at an upstream OIDC provider or GitHub: it redeems the upstream code
// and answers the downstream authorize request with our own authorization code.
func (p *provider) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	st, ar, ok := p.resumeState(w, r, q.Get("state"))
	if !ok {
		return
	}
	if e := q.Get("error"); e != "" {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHintf("the upstream identity provider answered %s: %s", e, q.Get("error_description")))
		return
	}
	res, err := p.identityProvider(st.IDP, "")
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint(err.Error()))
		return
	}
	browser, ok := res.conn.(connectors.BrowserConnector)
	if !ok {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrInvalidRequest.WithHintf("identity provider %q does not log in through the callback", res.idp.DisplayName))
		return
	}
	user, err := browser.Exchange(ctx, p.connectorLogin(res), q.Get("code"), connectors.BrowserSecrets{Nonce: st.Nonce, PKCEVerifier: st.PKCEVerifier})
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, loginError(ctx, res, err))
		return
	}
	p.finishLogin(w, r, ar, res.idp, user, false)
}

// loginError answers a login that the connector failed: with the connector's hint when the
// upstream refused the user or could not be reached; any other failure is logged and answered as
// an upstream failure, so that its details do not reach the user.
func loginError(ctx context.Context, res *resolved, err error) error {
	var e *connectors.Error
	if !errors.As(err, &e) {
		klog.FromContext(ctx).Error(err, "Upstream authentication failed", "idp", res.idp.DisplayName, "type", res.idp.Type)
		return errUpstreamFailed.WithWrap(err)
	}
	answer := fosite.ErrAccessDenied
	if e.Unavailable {
		answer = fosite.ErrTemporarilyUnavailable
	}
	if e.Hint != "" {
		answer = answer.WithHint(e.Hint)
	}
	if e.Err != nil {
		answer = answer.WithWrap(e.Err)
	}
	return answer
}

// finishLogin transforms the upstream identity and answers the downstream authorize request with
// our own authorization code.
func (p *provider) finishLogin(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, idp *issuer.IdentityProvider, user *connectors.Identity, browserless bool) {
	ctx := r.Context()
	downstream, err := transform(ctx, idp, idtransform.Identity{Username: user.Username, Groups: user.Groups})
	if err != nil {
		p.authorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint(err.Error()), browserless)
		return
	}
	grantScopes(ar)
	resp, err := p.oauth.NewAuthorizeResponse(ctx, ar, p.newLoginSession(ar, idp, user, downstream))
	if err != nil {
		p.authorizeError(ctx, w, ar, err, browserless)
		return
	}
	if browserless {
		w = foundRedirects{w}
	}
	setFormPostHeaders(w, ar)
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
func transform(ctx context.Context, idp *issuer.IdentityProvider, id idtransform.Identity) (idtransform.Identity, error) {
	res, err := idp.Transforms.Evaluate(ctx, id)
	if err != nil {
		return idtransform.Identity{}, fmt.Errorf("identity transformations failed: %w", err)
	}
	if res.Rejected {
		return idtransform.Identity{}, errors.New(res.Message)
	}
	return res.Identity, nil
}

// newLoginSession is the session of a fresh login for the authorize request ar.
func (p *provider) newLoginSession(ar fosite.Requester, idp *issuer.IdentityProvider, user *connectors.Identity, downstream idtransform.Identity) *Session {
	s := newSession()
	now := p.now().UTC()
	s.Custom = CustomSessionData{
		ProviderName: idp.DisplayName, ProviderResource: idp.Name, ProviderUID: string(idp.UID), ProviderType: string(idp.Type),
		UpstreamUsername: user.Username, UpstreamGroups: user.Groups,
		LoginTime:        now,
		Session:          user.Session,
		AdditionalClaims: user.AdditionalClaims,
	}
	s.Subject = user.Subject
	s.Username = downstream.Username
	s.Claims = &jwt.IDTokenClaims{Subject: s.Subject, RequestedAt: now, AuthTime: now}
	s.Headers = &jwt.Headers{Extra: map[string]any{"kid": p.keyID}}
	setIdentity(s, downstream, ar)
	if len(user.AdditionalClaims) > 0 {
		s.Claims.Extra[AdditionalClaimsClaim] = user.AdditionalClaims
	}
	s.SetExpiresAt(fosite.RefreshToken, now.Add(SessionLifetime))
	return s
}

// setIdentity records the downstream identity in the session, and in its ID token claims when
// req, the request the tokens are issued for, was granted the username and groups scopes. The
// pinniped-cli client always gets both, whatever scopes it asked for.
func setIdentity(s *Session, id idtransform.Identity, req fosite.Requester) {
	groups := id.Groups
	if groups == nil {
		groups = []string{}
	}
	s.Custom.Username, s.Custom.Groups = id.Username, groups
	if s.Claims.Extra == nil {
		s.Claims.Extra = map[string]any{}
	}
	delete(s.Claims.Extra, "username")
	delete(s.Claims.Extra, "groups")
	if grantedClaim(req, ScopeUsername) {
		s.Claims.Extra["username"] = id.Username
	}
	if grantedClaim(req, ScopeGroups) {
		s.Claims.Extra["groups"] = groups
	}
}

// grantedClaim reports whether tokens issued for req carry the claim of scope (username or groups).
func grantedClaim(req fosite.Requester, scope string) bool {
	return req.GetClient().GetID() == PinnipedCLIClientID || req.GetGrantedScopes().Has(scope)
}
