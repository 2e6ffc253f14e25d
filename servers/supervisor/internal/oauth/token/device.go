package token

import (
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/ory/fosite"

	"sealion.dev/servers/supervisor/internal/oauth/device"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
)

// pollDevice answers a device code poll (RFC 8628 section 3.4) from an authenticated client
// allowed the grant. While the person has not approved, it answers the poll and reports false.
// Once approved it turns r into the redemption of the approved login's authorization code, with
// its PKCE verifier, and reports true: the token endpoint then answers as for any code, so that
// the tokens, the session, its refresh token and the token exchange are a browser login's. The
// device authorization is marked redeemed first: of two polls that race, one gets the tokens.
func (p endpoint) pollDevice(w http.ResponseWriter, r *http.Request) bool {
	ctx := r.Context()
	client, err := p.AuthenticateClient(ctx, r)
	if err != nil {
		p.OAuth.WriteAccessError(ctx, w, nil, err)
		return false
	}
	if !slices.Contains(client.GetGrantTypes(), provider.GrantDeviceCode) {
		p.OAuth.WriteAccessError(ctx, w, nil, fosite.ErrUnauthorizedClient.WithHint("The client is not allowed the device authorization grant."))
		return false
	}
	code := r.PostForm.Get("device_code")
	if code == "" {
		p.OAuth.WriteAccessError(ctx, w, nil, fosite.ErrInvalidRequest.WithHint("The device_code parameter is missing."))
		return false
	}
	d, err := p.Storage.DeviceByCode(ctx, device.Signature(p.Issuer.TokenSigningKey, device.KindDeviceCode, code))
	if err == nil && d.ClientID != client.GetID() {
		err = fosite.ErrNotFound
	}
	if errors.Is(err, fosite.ErrNotFound) {
		p.OAuth.WriteAccessError(ctx, w, nil, fosite.ErrInvalidGrant.WithHint("The device_code is not valid.").WithWrap(err))
		return false
	}
	if err != nil {
		p.OAuth.WriteAccessError(ctx, w, nil, fosite.ErrServerError.WithWrap(err))
		return false
	}
	pollErr := d.Poll(p.Now())
	authCode, verifier := d.Code, d.Verifier
	if pollErr == nil {
		d.State, d.Code, d.Verifier = device.Redeemed, "", ""
	}
	if err := p.Storage.UpdateDevice(ctx, d); errors.Is(err, sessions.ErrDeviceChanged) {
		// Another poll changed it since this one read it: polling too fast, or the loser of
		// a race for the tokens.
		if pollErr == nil {
			pollErr = device.ErrRedeemed
		} else {
			pollErr = device.ErrSlowDown
		}
	} else if err != nil {
		pollErr = fosite.ErrServerError.WithWrap(err)
	}
	if pollErr != nil {
		p.OAuth.WriteAccessError(ctx, w, nil, pollErr)
		return false
	}
	form := url.Values{
		"grant_type":    {provider.GrantAuthorizationCode},
		"code":          {authCode},
		"code_verifier": {verifier},
		"redirect_uri":  {p.Issuer.Endpoint(provider.DeviceCallbackPath)},
		"client_id":     {client.GetID()},
	}
	r.Form, r.PostForm = form, form
	return true
}
