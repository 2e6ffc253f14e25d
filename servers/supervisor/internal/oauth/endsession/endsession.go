// Package endsession serves the end-session endpoint of OpenID Connect RP-Initiated Logout 1.0, an
// addition to Pinniped's Supervisor. A web application (an OIDCClient) signs its user out by
// sending the browser to <issuer>/oauth2/logout with an ID token it was issued (id_token_hint):
// the session of that ID token's login ends as at the revocation endpoint, its records deleted and
// its upstream tokens revoked, and the browser goes back to the client's
// post_logout_redirect_uri, when it is one of the client's allowedPostLogoutRedirectURIs, or sees
// a page saying it is signed out.
//
// The Supervisor keeps no browser session of its own (every login goes to the upstream identity
// provider), so there is nothing to end, nor to ask the user about, without an ID token: such a
// request only returns to a registered URI of the client it names. An ID token is accepted
// expired, as the specification asks, but only signed by this issuer and for the client it names.
// ID tokens carry exactly Pinniped's claims (its clients' tests compare them), so the login is
// found by its subject, client and login time (sessions.LoginLabel), not by a session ID claim.
package endsession

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"

	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/securityheaders"
)

// New returns the end-session endpoint of p's issuer.
func New(p *provider.Provider) http.Handler {
	return securityheaders.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			render(w, http.StatusMethodNotAllowed, page{Error: "Only GET and POST are allowed."})
			return
		}
		// provider.StrictForm parsed the query and a POST's body; a parameter given twice is
		// ambiguous, and the two readings could differ between us and a proxy in front.
		for name, values := range r.Form {
			if len(values) > 1 {
				render(w, http.StatusBadRequest, page{Error: "The parameter " + name + " is given more than once."})
				return
			}
		}
		ctx := r.Context()
		clientID := r.Form.Get("client_id")
		var hint *provider.IDTokenHint
		if raw := r.Form.Get("id_token_hint"); raw != "" {
			var err error
			if hint, err = p.VerifyIDTokenHint(ctx, raw); err != nil {
				// No detail: the same answer for a forged, foreign or malformed token.
				render(w, http.StatusBadRequest, page{Error: "The id_token_hint is not an ID token of a session of this issuer."})
				return
			}
			if clientID != "" && clientID != hint.ClientID {
				render(w, http.StatusBadRequest, page{Error: "The client_id is not the client of the id_token_hint."})
				return
			}
			clientID = hint.ClientID
		}
		// The whole request is checked before the session ends: a refused one ends nothing.
		var target *url.URL
		if redirect := r.Form.Get("post_logout_redirect_uri"); redirect != "" {
			if clientID == "" || !p.PostLogoutRedirectAllowed(ctx, clientID, redirect) {
				// Never redirect where the client did not register: that would make the
				// endpoint an open redirector.
				render(w, http.StatusBadRequest, page{Error: "The post_logout_redirect_uri is not registered for the client."})
				return
			}
			var err error
			if target, err = url.Parse(redirect); err != nil { // clientcheck makes such a client unusable; never end a session for it
				render(w, http.StatusBadRequest, page{Error: "The post_logout_redirect_uri is not a valid URL."})
				return
			}
		}
		if hint != nil {
			ended, err := p.EndSession(ctx, hint)
			for _, id := range ended {
				p.Audit.Event(ctx, "Session Ended By Logout", audit.Fields{SessionID: id}, "clientID", clientID)
			}
			if errors.Is(err, provider.ErrSessionNotEnded) {
				render(w, http.StatusServiceUnavailable, page{Error: "The session could not be ended now; try again later."})
				return
			}
		}
		if target == nil {
			render(w, http.StatusOK, page{Message: "You are signed out of " + p.Issuer.URL + "."})
			return
		}
		if state := r.Form.Get("state"); state != "" {
			q := target.Query()
			q.Set("state", state)
			target.RawQuery = q.Encode()
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, target.String(), http.StatusFound)
	}), Policy)
}

// page is what the endpoint shows when it does not redirect.
type page struct{ Error, Message string }

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign out</title>
<style>
body { font-family: sans-serif; max-width: 26em; margin: 4em auto; padding: 0 1em; }
.error { color: #a00; }
</style>
</head>
<body>
<h1>Sign out</h1>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{else}}<p id="message" role="status">{{.Message}}</p>{{end}}
</body>
</html>
`

var tmpl = template.Must(template.New("endsession").Parse(pageHTML))

// Policy is the Content-Security-Policy of the page: its own style, no script.
var Policy = securityheaders.Policy(pageHTML)

func render(w http.ResponseWriter, status int, v page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = tmpl.Execute(w, v)
}
