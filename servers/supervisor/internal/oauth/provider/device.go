package provider

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/ory/fosite"

	"sealion.dev/servers/internal/clientaddr"
	"sealion.dev/servers/supervisor/internal/oauth/device"
)

// The device authorization grant's endpoints (RFC 8628), relative to the issuer.
const (
	// DeviceAuthorizationPath is where a client starts a device authorization.
	DeviceAuthorizationPath = "/oauth2/device_authorization"
	// DevicePath is the verification page, where the person enters the user code.
	DevicePath = "/device"
	// DeviceCallbackPath is the redirect URI of the login the verification page starts: every
	// client allowed the device grant may use it (deviceClient).
	DeviceCallbackPath = "/device/callback"
)

// GrantDeviceCode is the device authorization grant's grant type.
const GrantDeviceCode = device.GrantType

// deviceStateVersion says what a sealed DeviceState is; bumped when it changes incompatibly.
const deviceStateVersion = "device-1"

// DeviceState is the state of the login the verification page starts: which device
// authorization it approves, the PKCE verifier of its authorization code, and the browser that
// approved it.
type DeviceState struct {
	// Name names the stored device authorization.
	Name     string    `json:"n"`
	Verifier string    `json:"k"`
	CSRF     string    `json:"c"`
	IssuedAt time.Time `json:"t"`
}

// SealDeviceState seals st for the state parameter of the login's authorize request.
func (p *Provider) SealDeviceState(st DeviceState) (string, error) {
	return p.state.seal(deviceStateVersion, st)
}

// OpenDeviceState opens a state SealDeviceState sealed, and checks that the browser that
// returns with it is the one that approved the request and that it has not expired.
func (p *Provider) OpenDeviceState(r *http.Request, encoded string) (*DeviceState, error) {
	var st DeviceState
	if err := p.state.open(deviceStateVersion, encoded, &st); err != nil {
		return nil, err
	}
	if !p.CheckBrowserCSRF(r, st.CSRF) {
		return nil, errors.New("CSRF cookie is missing or does not match the state: approve the device again in the same browser")
	}
	if p.Now().After(st.IssuedAt.Add(StateLifetime)) {
		return nil, errors.New("state parameter has expired: approve the device again")
	}
	return &st, nil
}

// BrowserCSRF returns the browser's CSRF value, giving it the CSRF cookie when it has none, for
// a page's form to carry: a form posted from another site cannot know it.
func (p *Provider) BrowserCSRF(w http.ResponseWriter, r *http.Request) (string, error) {
	csrf := p.csrfFromCookie(r)
	if csrf != "" {
		return csrf, nil
	}
	csrf, err := randomString(32)
	if err != nil {
		return "", err
	}
	http.SetCookie(w, &http.Cookie{
		Name: csrfCookie, Value: p.signCSRF(csrf), Path: "/", Secure: true, HttpOnly: true,
		SameSite: http.SameSiteNoneMode, MaxAge: int(csrfCookieLifetime.Seconds()),
	})
	return csrf, nil
}

// CheckBrowserCSRF reports whether value is the CSRF value of the request's cookie.
func (p *Provider) CheckBrowserCSRF(r *http.Request, value string) bool {
	csrf := p.csrfFromCookie(r)
	return csrf != "" && subtle.ConstantTimeCompare([]byte(csrf), []byte(value)) == 1
}

// AuthenticateClient authenticates the client of a request to a device endpoint as the token
// endpoint does: fosite's client authentication, the same secret checks, and the same count of
// failures per client and source.
func (p *Provider) AuthenticateClient(ctx context.Context, r *http.Request) (fosite.Client, error) {
	id, _ := ClientID(r)
	source := clientaddr.Source(r)
	fositeCtx := ctx
	if p.ClientFailures.Blocked(id, source) {
		fositeCtx = WithoutNewComparisons(ctx)
	}
	client, err := p.fosite.AuthenticateClient(fositeCtx, r, r.PostForm)
	switch {
	case errors.Is(err, ErrComparisonRefused):
		return nil, ErrClientBlocked
	case errors.Is(err, fosite.ErrInvalidClient) && p.KnownClient(ctx, id):
		p.ClientFailures.Failed(id, source)
	}
	return client, err
}

// ScopeAllowed reports whether client may ask for scope, by the issuer's scope strategy.
func (p *Provider) ScopeAllowed(ctx context.Context, client fosite.Client, scope string) bool {
	return p.config.GetScopeStrategy(ctx)(client.GetScopes(), scope)
}

// ClientID is the client a request to the token endpoint or a device endpoint names, in its HTTP
// basic credentials (form-encoded, RFC 6749 2.3.1), and then basic is true, or in its form.
func ClientID(r *http.Request) (id string, basic bool) {
	if id, _, ok := r.BasicAuth(); ok {
		if unescaped, err := url.QueryUnescape(id); err == nil {
			return unescaped, true
		}
		return id, true
	}
	return r.PostFormValue("client_id"), false
}

// ErrClientBlocked answers a client that failed to authenticate too often from its source, with
// a secret not verified before: invalid_client, as any failed client authentication.
var ErrClientBlocked = fosite.ErrInvalidClient.WithHint("Too many failed client authentications; try again later.")
