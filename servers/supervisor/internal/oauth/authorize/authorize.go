// Package authorize serves the authorize endpoint, where every login starts. It validates the
// client's authorize request and sends the browser on: to the identity provider chooser, to the
// upstream OIDC provider or GitHub, or to the LDAP/AD login form. The pinniped CLI may instead
// send a username and password as headers (the cli_password flow) and get the code at once.
package authorize

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ory/fosite"
	"k8s.io/apimachinery/pkg/util/sets"

	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
)

// Headers on which the CLI sends the user's credentials in the cli_password flow.
const (
	usernameHeader = "Pinniped-Username"
	passwordHeader = "Pinniped-Password"
)

// auditedParams are the authorize parameters whose values the audit log shows, Pinniped's list.
var auditedParams = sets.New("scope", "response_type", "client_id", "redirect_uri", "response_mode", "display", "prompt",
	"max_age", "ui_locales", "id_token_hint", "login_hint", "acr_values", "claims_locales", "claims", "request",
	"request_uri", "registration", "code_challenge_method", "pinniped_idp_name", "pinniped_idp_type", "access_type")

// authorizer serves the authorize endpoint of an issuer.
type authorizer struct{ *provider.Provider }

// New returns the authorize endpoint of the issuer of p.
func New(p *provider.Provider) http.Handler { return http.HandlerFunc(authorizer{p}.authorize) }

// authorize validates a downstream authorize request and starts the login: it sends the browser
// to the identity provider chooser, the upstream OIDC provider, GitHub or the LDAP/AD login form;
// a request carrying credentials headers is answered at once (authorizeWithoutBrowser). Nothing
// is stored: the request travels in the sealed upstream state.
func (p authorizer) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !provider.AllowMethods(w, r, http.MethodGet, http.MethodPost) {
		return
	}
	p.AuditParams(ctx, r.Form, auditedParams)
	hasUsername, hasPassword := len(r.Header.Values(usernameHeader)) > 0, len(r.Header.Values(passwordHeader)) > 0
	p.Audit.Event(ctx, "HTTP Request Custom Headers Used", audit.Fields{}, usernameHeader, hasUsername, passwordHeader, hasPassword)
	browserless := hasUsername || hasPassword
	ar, err := p.OAuth.NewAuthorizeRequest(ctx, r)
	if err != nil {
		p.AuthorizeError(ctx, w, ar, err, browserless)
		return
	}
	if slices.Contains(strings.Fields(ar.GetRequestForm().Get("prompt")), "none") {
		p.AuthorizeError(ctx, w, ar, fosite.ErrLoginRequired.WithHint("prompt=none is not supported: the user must log in"), browserless)
		return
	}
	if err := p.validateAuthorize(ctx, ar); err != nil {
		p.AuthorizeError(ctx, w, ar, err, browserless)
		return
	}
	form := ar.GetRequestForm()
	if !browserless && form.Get("pinniped_idp_name") == "" && len(p.Issuer.IdentityProviders) > 1 {
		chooser := url.URL{Path: p.Issuer.Path(provider.ChooseIdentityProviderPath), RawQuery: form.Encode()}
		http.Redirect(w, r, chooser.String(), http.StatusSeeOther)
		return
	}
	res, err := p.IdentityProvider(form.Get("pinniped_idp_name"), form.Get("pinniped_idp_type"))
	if err != nil {
		p.AuthorizeError(ctx, w, ar, fosite.ErrInvalidRequest.WithHint(err.Error()), browserless)
		return
	}
	p.AuditUsing(ctx, res)
	if browserless {
		p.authorizeWithoutBrowser(w, r, ar, res)
		return
	}
	st, state, err := p.NewState(w, r, form, res.IDP)
	if err != nil {
		p.OAuth.WriteAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
		return
	}
	if browser, ok := res.Conn.(connectors.BrowserConnector); ok {
		to, err := browser.AuthorizeURL(ctx, p.ConnectorLogin(res), state, connectors.BrowserSecrets{Nonce: st.Nonce, PKCEVerifier: st.PKCEVerifier})
		if err != nil {
			p.OAuth.WriteAuthorizeError(ctx, w, ar, p.LoginError(ctx, res, err))
			return
		}
		p.AuditAuthorizeID(ctx, "Upstream Authorize Redirect", state)
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	// Without a browser flow of its own, the upstream checks the password of the Supervisor's
	// login form.
	login := url.URL{Path: p.Issuer.Path(provider.LoginPath), RawQuery: url.Values{"state": {state}}.Encode()}
	p.AuditAuthorizeID(ctx, "Upstream Authorize Redirect", state)
	http.Redirect(w, r, login.String(), http.StatusSeeOther)
}

// validateAuthorize runs every check of the final authorize response, with storage that keeps
// nothing: the login has not happened yet.
func (p authorizer) validateAuthorize(ctx context.Context, ar fosite.AuthorizeRequester) error {
	provider.GrantScopes(ar)
	// The user is not known yet; fosite's OpenID Connect checks only need some subject.
	pending := sessions.NewSession()
	pending.Claims.Subject = "pending-login"
	_, err := p.Validate.NewAuthorizeResponse(ctx, ar, pending)
	return err
}

// Answers of the cli_password flow, worded as Pinniped words them: clients show them to users.
var (
	errHeadersNotAllowed = fosite.ErrAccessDenied.WithHint("This client is not allowed to submit username or password headers to this endpoint.")
	errMissingPassword   = fosite.ErrAccessDenied.WithHint("Missing or blank username or password.")
	errTooManyAttempts   = fosite.ErrAccessDenied.WithHint("Too many login attempts for this user, try again later.")
)

// authorizeWithoutBrowser runs the cli_password flow: the pinniped CLI sends the credentials as
// headers and reads the code (or the error) from the redirect's Location without following it.
func (p authorizer) authorizeWithoutBrowser(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, res *provider.Resolved) {
	ctx := r.Context()
	if ar.GetClient().GetID() != provider.PinnipedCLIClientID {
		p.AuthorizeError(ctx, w, ar, errHeadersNotAllowed, true)
		return
	}
	username, password := r.Header.Get(usernameHeader), r.Header.Get(passwordHeader)
	if username == "" || password == "" {
		p.AuthorizeError(ctx, w, ar, errMissingPassword, true)
		return
	}
	if !res.Allows(issuer.FlowCLIPassword) {
		p.AuthorizeError(ctx, w, ar, provider.ErrNoPasswordFlow, true)
		return
	}
	if !p.AllowAttempt(res, username) {
		p.AuthorizeError(ctx, w, ar, errTooManyAttempts, true)
		return
	}
	user, err := p.PasswordLogin(ctx, res, username, password)
	if err != nil {
		p.AuthorizeError(ctx, w, ar, err, true)
		return
	}
	p.FinishLogin(w, r, ar, res.IDP, user, true)
}
