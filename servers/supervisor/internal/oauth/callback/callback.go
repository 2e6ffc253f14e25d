// Package callback serves the redirect URI that the Supervisor registers at upstream OIDC
// providers and GitHub: it finishes a browser login that the authorize endpoint sent upstream.
package callback

import (
	"net/http"

	"github.com/ory/fosite"
	"k8s.io/apimachinery/pkg/util/sets"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// auditedParams are the callback parameters whose values the audit log shows, Pinniped's list:
// the upstream's errors, not its code or the state.
var auditedParams = sets.New("error", "error_description", "error_uri")

// callbacks serves the callback endpoint of an issuer.
type callbacks struct{ *provider.Provider }

// New returns the callback endpoint of the issuer of p.
func New(p *provider.Provider) http.Handler { return http.HandlerFunc(callbacks{p}.callback) }

// callback finishes a login at an upstream OIDC provider or GitHub: it redeems the upstream code
// and answers the downstream authorize request with our own authorization code.
func (p callbacks) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !provider.AllowMethods(w, r, http.MethodGet) {
		return
	}
	q := r.URL.Query()
	p.AuditParams(ctx, q, auditedParams)
	st, ar, ok := p.ResumeState(w, r, q.Get("state"))
	if !ok {
		return
	}
	p.AuditAuthorizeID(ctx, "AuthorizeID From Parameters", q.Get("state"))
	if e := q.Get("error"); e != "" {
		p.OAuth.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHintf("the upstream identity provider answered %s: %s", e, q.Get("error_description")))
		return
	}
	res, err := p.IdentityProvider(st.IDP, "")
	if err != nil {
		p.OAuth.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint(err.Error()))
		return
	}
	p.AuditUsing(ctx, res)
	browser, ok := res.Conn.(connectors.BrowserConnector)
	if !ok {
		p.OAuth.WriteAuthorizeError(ctx, w, ar, fosite.ErrInvalidRequest.WithHintf("identity provider %q does not log in through the callback", res.IDP.DisplayName))
		return
	}
	callCtx, call := connectors.StartCall(ctx, res.IDP.Type, connectors.OpExchange)
	user, err := browser.Exchange(callCtx, p.ConnectorLogin(res), q.Get("code"), connectors.BrowserSecrets{Nonce: st.Nonce, PKCEVerifier: st.PKCEVerifier})
	call.End(err)
	if err != nil {
		p.OAuth.WriteAuthorizeError(ctx, w, ar, p.LoginError(ctx, res, err))
		return
	}
	p.FinishLogin(w, r, ar, res.IDP, user, false)
}
