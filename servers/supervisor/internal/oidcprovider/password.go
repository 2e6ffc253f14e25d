package oidcprovider

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"

	"github.com/ory/fosite"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// Answers of the password flows, worded as Pinniped words them: clients show them to users.
var (
	errHeadersNotAllowed = fosite.ErrAccessDenied.WithHint("This client is not allowed to submit username or password headers to this endpoint.")
	errMissingPassword   = fosite.ErrAccessDenied.WithHint("Missing or blank username or password.")
	errNoPasswordFlow    = fosite.ErrAccessDenied.WithHint("Resource owner password credentials grant is not allowed for this upstream provider according to its configuration.")
	errUpstreamFailed    = fosite.ErrTemporarilyUnavailable.WithHint("Unexpected error during upstream authentication.")
	errTooManyAttempts   = fosite.ErrAccessDenied.WithHint("Too many login attempts for this user, try again later.")
)

// authorizeWithoutBrowser runs the cli_password flow: the pinniped CLI sends the credentials as
// headers and reads the code (or the error) from the redirect's Location without following it.
func (p *provider) authorizeWithoutBrowser(w http.ResponseWriter, r *http.Request, ar fosite.AuthorizeRequester, res *resolved) {
	ctx := r.Context()
	if ar.GetClient().GetID() != PinnipedCLIClientID {
		p.authorizeError(ctx, w, ar, errHeadersNotAllowed, true)
		return
	}
	username, password := r.Header.Get(usernameHeader), r.Header.Get(passwordHeader)
	if username == "" || password == "" {
		p.authorizeError(ctx, w, ar, errMissingPassword, true)
		return
	}
	if !res.allows(issuer.FlowCLIPassword) {
		p.authorizeError(ctx, w, ar, errNoPasswordFlow, true)
		return
	}
	if !p.allowAttempt(res, username) {
		p.authorizeError(ctx, w, ar, errTooManyAttempts, true)
		return
	}
	user, err := p.passwordLogin(ctx, res, username, password)
	if err != nil {
		p.authorizeError(ctx, w, ar, err, true)
		return
	}
	p.finishLogin(w, r, ar, res.idp, user, true)
}

// allowAttempt counts a password attempt of username at the identity provider of res and
// reports whether it may go upstream (see loginLimiter).
func (p *provider) allowAttempt(res *resolved, username string) bool {
	return p.logins.allow(string(res.idp.Type)+"/"+p.iss.Namespace+"/"+res.idp.Name, username)
}

// passwordLogin checks a username and password with the identity provider's connector.
func (p *provider) passwordLogin(ctx context.Context, res *resolved, username, password string) (*connectors.Identity, error) {
	conn, ok := res.conn.(connectors.PasswordConnector)
	if !ok {
		return nil, errNoPasswordFlow
	}
	user, err := conn.Authenticate(ctx, p.connectorLogin(res), username, password)
	if err != nil {
		return nil, loginError(ctx, res, err)
	}
	return user, nil
}

// Errors the login form shows, by the err parameter of its URL; nothing else is shown, so that a
// crafted link cannot put words on the page.
const (
	loginErrorCredentials = "login_error"
	loginErrorInternal    = "internal_error"
	loginErrorTooMany     = "too_many_attempts"
)

var loginErrorMessages = map[string]string{
	loginErrorCredentials: "Incorrect username or password.",
	loginErrorInternal:    "An internal error occurred. Please contact your administrator for help.",
	loginErrorTooMany:     "Too many login attempts, try again later.",
}

// login serves the username and password form of LDAP and Active Directory logins in a browser
// (GET) and checks what the user submits (POST). The sealed state, bound to the browser by the
// CSRF cookie, carries the downstream authorize request.
func (p *provider) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		if tooLarge := new(http.MaxBytesError); errors.As(err, &tooLarge) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	encoded := r.Form.Get("state")
	st, ar, ok := p.resumeState(w, r, encoded)
	if !ok {
		return
	}
	ctx := r.Context()
	res, err := p.identityProvider(st.IDP, "")
	if err != nil {
		p.oauth.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint(err.Error()))
		return
	}
	// A connector with a browser flow of its own (OIDC's password grant) is not offered the form.
	_, password := res.conn.(connectors.PasswordConnector)
	if _, browser := res.conn.(connectors.BrowserConnector); !password || browser {
		http.Error(w, "this identity provider does not log in with a password form", http.StatusBadRequest)
		return
	}
	if r.Method == http.MethodGet {
		p.renderLogin(w, res.idp.DisplayName, encoded, loginErrorMessages[r.Form.Get("err")])
		return
	}
	username := r.PostForm.Get("username")
	again := func(code string) {
		u := url.URL{Path: p.iss.Path(LoginPath), RawQuery: url.Values{"state": {encoded}, "err": {code}}.Encode()}
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
	}
	if !p.allowAttempt(res, username) {
		again(loginErrorTooMany)
		return
	}
	user, err := p.passwordLogin(ctx, res, username, r.PostForm.Get("password"))
	if err != nil {
		// A refusal is the user's doing; other failures are the server's.
		code := loginErrorInternal
		if errors.Is(err, fosite.ErrAccessDenied) {
			code = loginErrorCredentials
		}
		again(code)
		return
	}
	p.finishLogin(w, r, ar, res.idp, user, false)
}

var loginPage = template.Must(template.New("login").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in to {{.IDP}}</title>
<style>
body { font-family: sans-serif; max-width: 24em; margin: 4em auto; padding: 0 1em; }
label, input, button { display: block; width: 100%; box-sizing: border-box; margin-top: .5em; }
input, button { padding: .5em; font-size: 1em; }
.error { color: #a00; }
</style>
</head>
<body>
<h1>Log in to {{.IDP}}</h1>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="state" value="{{.State}}">
<label for="username">Username</label>
<input type="text" id="username" name="username" autocomplete="username" autocapitalize="none" required autofocus>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<button type="submit">Log in</button>
</form>
</body>
</html>
`))

func (p *provider) renderLogin(w http.ResponseWriter, idpName, state, message string) {
	setPageHeaders(w)
	_ = loginPage.Execute(w, map[string]string{"IDP": idpName, "Action": p.iss.Path(LoginPath), "State": state, "Error": message})
}

// setPageHeaders keeps the Supervisor's pages out of caches and frames and lets them run no
// script.
func setPageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}
