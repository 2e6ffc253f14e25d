// Package loginpages serves the Supervisor's own pages in a browser login: the username and
// password form of LDAP and Active Directory, and the chooser of an identity provider when the
// client named none and the issuer has several. (The form_post page that hands the code to the
// client is fosite's response, rendered with the provider package's template.)
package loginpages

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"

	"github.com/ory/fosite"
	"k8s.io/apimachinery/pkg/util/sets"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/securityheaders"
)

// pages serves the login pages of an issuer.
type pages struct{ *provider.Provider }

// Login returns the login form of the issuer of p.
func Login(p *provider.Provider) http.Handler { return http.HandlerFunc(pages{p}.login) }

// Chooser returns the identity provider chooser of the issuer of p.
func Chooser(p *provider.Provider) http.Handler {
	return http.HandlerFunc(pages{p}.chooseIdentityProvider)
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

// auditedLoginParams are the login form's parameters whose values the audit log shows,
// Pinniped's list: the error code, not the state, username or password.
var auditedLoginParams = sets.New("err")

// login serves the username and password form of LDAP and Active Directory logins in a browser
// (GET) and checks what the user submits (POST). The sealed state, bound to the browser by the
// CSRF cookie, carries the downstream authorize request.
func (p pages) login(w http.ResponseWriter, r *http.Request) {
	if !provider.AllowMethods(w, r, http.MethodGet, http.MethodPost) {
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
	ctx := r.Context()
	p.AuditParams(ctx, r.Form, auditedLoginParams)
	encoded := r.Form.Get("state")
	st, ar, ok := p.ResumeState(w, r, encoded)
	if !ok {
		return
	}
	p.AuditAuthorizeID(ctx, "AuthorizeID From Parameters", encoded)
	res, err := p.IdentityProvider(st.IDP, "")
	if err != nil {
		p.AuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint(err.Error()), false)
		return
	}
	// A connector with a browser flow of its own (OIDC's password grant) is not offered the form.
	_, password := res.Conn.(connectors.PasswordConnector)
	if _, browser := res.Conn.(connectors.BrowserConnector); !password || browser {
		http.Error(w, "this identity provider does not log in with a password form", http.StatusBadRequest)
		return
	}
	if r.Method == http.MethodGet {
		p.renderLogin(w, res.IDP.DisplayName, encoded, loginErrorMessages[r.Form.Get("err")])
		return
	}
	p.AuditUsing(ctx, res)
	username := r.PostForm.Get("username")
	again := func(code string) {
		u := url.URL{Path: p.Issuer.Path(provider.LoginPath), RawQuery: url.Values{"state": {encoded}, "err": {code}}.Encode()}
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
	}
	if !p.AllowAttempt(res, username) {
		again(loginErrorTooMany)
		return
	}
	user, err := p.PasswordLogin(ctx, res, username, r.PostForm.Get("password"))
	if err != nil {
		// A refusal is the user's doing; other failures are the server's.
		code := loginErrorInternal
		if errors.Is(err, fosite.ErrAccessDenied) {
			code = loginErrorCredentials
		}
		again(code)
		return
	}
	p.FinishLogin(w, r, ar, res.IDP, user, false)
}

const loginHTML = `<!DOCTYPE html>
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
`

var loginPage = template.Must(template.New("login").Parse(loginHTML))

// LoginPolicy is the Content-Security-Policy of the login form: its own style, no script.
var LoginPolicy = securityheaders.Policy(loginHTML)

func (p pages) renderLogin(w http.ResponseWriter, idpName, state, message string) {
	setContentType(w)
	_ = loginPage.Execute(w, map[string]string{"IDP": idpName, "Action": p.Issuer.Path(provider.LoginPath), "State": state, "Error": message})
}

// setContentType names the pages' type, which net/http would otherwise sniff from the first bytes
// written.
func setContentType(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
}
