// Package devicegrant serves the device authorization grant's endpoints (RFC 8628) but the token
// endpoint's poll (in token): the device authorization endpoint, where a client without a browser
// gets a device code and a user code; the verification page, where the person enters the user
// code in any browser, sees which client asks for what, and approves or denies; and the callback
// of the login the approval starts. That login is an ordinary authorize request the page makes
// for the client, with its own PKCE and the issuer's device callback as its redirect URI, so the
// identity provider chooser, every kind of upstream, identity transformations, policies and audit
// events are those of a browser login. The callback keeps the authorization code, sealed, in the
// device authorization, for the client's next poll to redeem.
package devicegrant

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ory/fosite"
	"k8s.io/apimachinery/pkg/util/sets"

	"sealion.dev/servers/supervisor/internal/oauth/device"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
)

// maxEntries is how often one user code may be entered at the verification page; then it is
// denied: nobody legitimately needs more, and a code leaked to a guesser is spent.
const maxEntries = 5

// auditedParams are the device authorization parameters whose values the audit log shows.
var auditedParams = sets.New("client_id", "scope", "pinniped_idp_name", "pinniped_idp_type")

// endpoints serves the device endpoints of an issuer.
type endpoints struct{ *provider.Provider }

// Authorization returns the device authorization endpoint of the issuer of p.
func Authorization(p *provider.Provider) http.Handler {
	return http.HandlerFunc(endpoints{p}.authorize)
}

// Verification returns the verification page of the issuer of p.
func Verification(p *provider.Provider) http.Handler { return http.HandlerFunc(endpoints{p}.verify) }

// Callback returns the callback of the logins the verification page starts.
func Callback(p *provider.Provider) http.Handler { return http.HandlerFunc(endpoints{p}.callback) }

// authorizationResponse is RFC 8628 section 3.2's answer.
type authorizationResponse struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
}

// authorize serves the device authorization endpoint: an authenticated client allowed the grant
// asks for scopes it may ask for, and perhaps for an identity provider as at the authorize
// endpoint (pinniped_idp_name, pinniped_idp_type), and gets its codes.
func (p endpoints) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !provider.AllowMethods(w, r, http.MethodPost) {
		return
	}
	p.AuditParams(ctx, r.PostForm, auditedParams)
	client, err := p.AuthenticateClient(ctx, r)
	if err != nil {
		p.OAuth.WriteAccessError(ctx, w, nil, err)
		return
	}
	if !slices.Contains(client.GetGrantTypes(), provider.GrantDeviceCode) {
		p.OAuth.WriteAccessError(ctx, w, nil, fosite.ErrUnauthorizedClient.WithHint("The client is not allowed the device authorization grant."))
		return
	}
	if !p.AllowDeviceStart(r) {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "slow_down", "error_description": "Too many device authorizations from this address; try again in a minute."})
		return
	}
	scopes := fosite.RemoveEmpty(strings.Split(r.PostForm.Get("scope"), " "))
	for _, s := range scopes {
		if !p.ScopeAllowed(ctx, client, s) {
			p.OAuth.WriteAccessError(ctx, w, nil, fosite.ErrInvalidScope.WithHintf("The client is not allowed to request scope %q.", s))
			return
		}
	}
	deviceCode, err := device.NewDeviceCode()
	if err != nil {
		p.OAuth.WriteAccessError(ctx, w, nil, fosite.ErrServerError.WithWrap(err))
		return
	}
	userCode, err := device.NewUserCode(rand.Reader)
	if err != nil {
		p.OAuth.WriteAccessError(ctx, w, nil, fosite.ErrServerError.WithWrap(err))
		return
	}
	// The identity provider is checked when the login starts, as for any authorize request.
	a := sessions.DeviceAuthorization{Authorization: device.NewAuthorization(p.Now()), ClientID: client.GetID(), Scopes: scopes,
		IDPName: r.PostForm.Get("pinniped_idp_name"), IDPType: r.PostForm.Get("pinniped_idp_type")}
	key := p.Issuer.TokenSigningKey
	if err := p.Storage.CreateDevice(ctx, device.Signature(key, device.KindDeviceCode, deviceCode), device.Signature(key, device.KindUserCode, userCode), a); err != nil {
		p.OAuth.WriteAccessError(ctx, w, nil, fosite.ErrServerError.WithWrap(err))
		return
	}
	shown := device.FormatUserCode(userCode)
	verification := p.Issuer.Endpoint(provider.DevicePath)
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	_ = json.NewEncoder(w).Encode(authorizationResponse{
		DeviceCode:              deviceCode,
		UserCode:                shown,
		VerificationURI:         verification,
		VerificationURIComplete: verification + "?" + url.Values{"user_code": {shown}}.Encode(),
		ExpiresIn:               int(device.Lifetime / time.Second),
		Interval:                int(device.Interval / time.Second),
	})
}

// Actions of the verification page's form: look the code up, then approve or deny.
const (
	actionApprove = "approve"
	actionDeny    = "deny"
)

// Messages of the verification page; none repeats what was typed or what an upstream said.
const (
	msgInvalidCode = "That code is not valid, has expired or was already used. Check the code your device shows."
	msgTooMany     = "Too many codes entered from here. Wait a minute and try again."
	msgCSRF        = "This page expired. Enter the code again."
	msgInternal    = "An internal error occurred. Please try again, or contact your administrator."
	msgApproved    = "Your device is logged in. You can close this page and return to your device."
	msgDenied      = "The request was denied. The device gets no access."
	msgLoginFailed = "The login did not finish. The device is still waiting: enter the code again to retry."
)

// verify serves the verification page. GET shows the form for the user code (filled in from
// verification_uri_complete's user_code). POST looks the code up and shows the request it
// belongs to, with approve and deny; approve starts the client's login, deny ends the request.
// Every POST carries the browser's CSRF value, so that another site cannot post a code for the
// person's browser to approve.
func (p endpoints) verify(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !provider.AllowMethods(w, r, http.MethodGet, http.MethodPost) {
		return
	}
	if err := r.ParseForm(); err != nil {
		p.render(w, http.StatusBadRequest, page{Message: msgInvalidCode})
		return
	}
	csrf, err := p.BrowserCSRF(w, r)
	if err != nil {
		p.render(w, http.StatusInternalServerError, page{Message: msgInternal})
		return
	}
	view := page{Action: p.Issuer.Path(provider.DevicePath), CSRF: csrf, UserCode: r.FormValue("user_code")}
	if r.Method == http.MethodGet {
		p.render(w, http.StatusOK, view)
		return
	}
	if !p.CheckBrowserCSRF(r, r.PostForm.Get("csrf")) {
		view.Error = msgCSRF
		p.render(w, http.StatusForbidden, view)
		return
	}
	if !p.AllowUserCodeEntry(r) {
		view.Error = msgTooMany
		p.render(w, http.StatusTooManyRequests, view)
		return
	}
	d, code, ok := p.findPending(r, &view)
	if !ok {
		p.render(w, http.StatusBadRequest, view)
		return
	}
	d.Attempts++
	if d.Attempts > maxEntries {
		d.State = device.Denied
	}
	switch r.PostForm.Get("action") {
	case actionDeny:
		d.State = device.Denied
	case actionApprove:
		p.approve(w, r, d, csrf)
		return
	}
	if err := p.Storage.UpdateDevice(ctx, d); err != nil {
		view.Error = msgInternal
		p.render(w, http.StatusConflict, view)
		return
	}
	switch {
	case r.PostForm.Get("action") == actionDeny:
		p.render(w, http.StatusOK, page{Message: msgDenied})
	case d.State == device.Denied:
		view.Error = msgInvalidCode
		p.render(w, http.StatusBadRequest, view)
	default:
		view.UserCode, view.Client, view.Scopes, view.Confirm = device.FormatUserCode(code), d.ClientID, d.Scopes, true
		p.render(w, http.StatusOK, view)
	}
}

// findPending finds the pending device authorization of the user code the form carries. When
// there is none it sets the page's error and reports false.
func (p endpoints) findPending(r *http.Request, view *page) (*sessions.Device, string, bool) {
	code, ok := device.NormalizeUserCode(r.PostForm.Get("user_code"))
	if !ok {
		view.Error = msgInvalidCode
		return nil, "", false
	}
	d, err := p.Storage.DeviceByUserCode(r.Context(), device.Signature(p.Issuer.TokenSigningKey, device.KindUserCode, code))
	switch {
	case errors.Is(err, fosite.ErrNotFound):
		view.Error = msgInvalidCode
		return nil, "", false
	case err != nil:
		view.Error = msgInternal
		return nil, "", false
	case d.State != device.Pending || !p.Now().Before(d.ExpiresAt):
		view.Error = msgInvalidCode
		return nil, "", false
	}
	return d, code, true
}

// approve starts the login that approves d: an authorize request for d's client and scopes whose
// code comes back to the device callback, with the PKCE verifier sealed in its state.
func (p endpoints) approve(w http.ResponseWriter, r *http.Request, d *sessions.Device, csrf string) {
	ctx := r.Context()
	if err := p.Storage.UpdateDevice(ctx, d); err != nil {
		p.render(w, http.StatusConflict, page{Message: msgInternal})
		return
	}
	if d.State != device.Pending {
		p.render(w, http.StatusBadRequest, page{Message: msgInvalidCode})
		return
	}
	verifier := make([]byte, 32)
	if _, err := rand.Read(verifier); err != nil {
		p.render(w, http.StatusInternalServerError, page{Message: msgInternal})
		return
	}
	st := provider.DeviceState{Name: d.Name(), Verifier: base64.RawURLEncoding.EncodeToString(verifier), CSRF: csrf, IssuedAt: p.Now().UTC()}
	state, err := p.SealDeviceState(st)
	if err != nil {
		p.render(w, http.StatusInternalServerError, page{Message: msgInternal})
		return
	}
	challenge := sha256.Sum256([]byte(st.Verifier))
	q := url.Values{
		"client_id":             {d.ClientID},
		"response_type":         {"code"},
		"scope":                 {strings.Join(d.Scopes, " ")},
		"redirect_uri":          {p.Issuer.Endpoint(provider.DeviceCallbackPath)},
		"state":                 {state},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(challenge[:])},
		"code_challenge_method": {"S256"},
	}
	for key, value := range map[string]string{"pinniped_idp_name": d.IDPName, "pinniped_idp_type": d.IDPType} {
		if value != "" {
			q.Set(key, value)
		}
	}
	to := url.URL{Path: p.Issuer.Path(provider.AuthorizePath), RawQuery: q.Encode()}
	http.Redirect(w, r, to.String(), http.StatusSeeOther)
}

// callback finishes the login that approves a device authorization: the authorize endpoint
// answered it with our own authorization code, which the device authorization keeps, sealed, for
// the client's next poll. A login that failed leaves the request pending: the person may enter
// the code again.
func (p endpoints) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !provider.AllowMethods(w, r, http.MethodGet) {
		return
	}
	q := r.URL.Query()
	st, err := p.OpenDeviceState(r, q.Get("state"))
	if err != nil {
		p.render(w, http.StatusBadRequest, page{Message: msgLoginFailed})
		return
	}
	if q.Get("error") != "" || q.Get("code") == "" {
		p.render(w, http.StatusBadRequest, page{Message: msgLoginFailed})
		return
	}
	d, err := p.Storage.DeviceByName(ctx, st.Name)
	if err != nil || d.State != device.Pending || !p.Now().Before(d.ExpiresAt) {
		p.render(w, http.StatusBadRequest, page{Message: msgInvalidCode})
		return
	}
	d.State, d.Code, d.Verifier = device.Approved, q.Get("code"), st.Verifier
	if err := p.Storage.UpdateDevice(ctx, d); err != nil {
		p.render(w, http.StatusConflict, page{Message: msgInternal})
		return
	}
	p.render(w, http.StatusOK, page{Message: msgApproved})
}
