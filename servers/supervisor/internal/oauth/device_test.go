package oauth

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// deviceCLI is the pinniped CLI's OAuth client with the device authorization endpoint.
func (h *harness) deviceCLI() *oauth2.Config {
	cfg := h.cli()
	cfg.Endpoint.DeviceAuthURL = h.issuerURL + provider.DeviceAuthorizationPath
	return cfg
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// verificationPage opens u (the verification page) in the browser and returns the CSRF value
// of its form.
func (h *harness) verificationPage(u string) string {
	h.t.Helper()
	resp, page := h.get(u)
	m := csrfField.FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil || resp.Header.Get("X-Frame-Options") != "DENY" {
		h.t.Fatalf("verification page: %s %v\n%s", resp.Status, resp.Header, page)
	}
	return m[1]
}

// enterCode posts the verification page's form from the browser and returns the last response
// (after redirects) and its page.
func (h *harness) enterCode(csrf, userCode, action string) (*http.Response, string) {
	h.t.Helper()
	form := url.Values{"csrf": {csrf}, "user_code": {userCode}}
	if action != "" {
		form.Set("action", action)
	}
	resp, err := h.browser.PostForm(h.issuerURL+provider.DevicePath, form)
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String()
}

// poll sends one device code poll for the pinniped CLI.
func (h *harness) poll(deviceCode string) (int, map[string]any) {
	h.t.Helper()
	return h.postToken(url.Values{"grant_type": {provider.GrantDeviceCode}, "device_code": {deviceCode}, "client_id": {provider.PinnipedCLIClientID}}, "", "")
}

func TestDeviceFlow(t *testing.T) {
	h := newHarness(t, nil)
	cfg := h.deviceCLI()
	da, err := cfg.DeviceAuth(h.clientContext())
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$`).MatchString(da.UserCode) ||
		da.VerificationURI != h.issuerURL+"/device" || da.VerificationURIComplete != h.issuerURL+"/device?user_code="+da.UserCode ||
		da.Interval != 5 || time.Until(da.Expiry) < 9*time.Minute || time.Until(da.Expiry) > 10*time.Minute || len(da.DeviceCode) < 43 {
		t.Fatalf("device authorization %+v", da)
	}
	if got := h.storedTypes()["device"]; got != 1 {
		t.Errorf("%d device records stored, want 1", got)
	}

	// Before the person approves: pending, then slow_down for a poll sooner than the interval.
	if status, body := h.poll(da.DeviceCode); status != http.StatusBadRequest || body["error"] != "authorization_pending" {
		t.Errorf("first poll: %d %v, want authorization_pending", status, body)
	}
	if status, body := h.poll(da.DeviceCode); status != http.StatusBadRequest || body["error"] != "slow_down" {
		t.Errorf("second poll at once: %d %v, want slow_down", status, body)
	}

	// The person opens verification_uri_complete, sees what asks, and approves; the login
	// through the upstream ends at the device callback.
	csrf := h.verificationPage(da.VerificationURIComplete)
	resp, page := h.enterCode(csrf, strings.ToLower(strings.ReplaceAll(da.UserCode, "-", " ")), "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="client">pinniped-cli<`) || !strings.Contains(page, "<code>offline_access</code>") ||
		!strings.Contains(page, `name="user_code" value="`+da.UserCode+`"`) {
		t.Fatalf("after entering the code: %s\n%s", resp.Status, page)
	}
	resp, page = h.enterCode(csrf, da.UserCode, "approve")
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/fd"+provider.DeviceCallbackPath || !strings.Contains(page, "Your device is logged in") {
		t.Fatalf("approval ended at %s %s\n%s", resp.Status, resp.Request.URL, page)
	}

	// The next poll gets the tokens of a browser login (golang.org/x/oauth2's client waits the
	// interval before it polls).
	tok, err := cfg.DeviceAccessToken(h.clientContext(), da)
	if err != nil {
		t.Fatalf("poll after approval: %v", err)
	}
	_, claims := h.idToken(tok.Extra("id_token").(string), provider.PinnipedCLIClientID)
	if claims["username"] != "pinny@example.com" {
		t.Errorf("ID token claims %v", claims)
	}
	if status, body := h.exchange(tok.AccessToken, "cluster-1"); status != http.StatusOK {
		t.Errorf("token exchange after a device login: %d %v", status, body)
	}
	refreshed, err := cfg.TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil || refreshed.AccessToken == "" {
		t.Errorf("refresh after a device login: %v", err)
	}

	// The device code is spent, and so is the user code.
	if status, body := h.poll(da.DeviceCode); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Errorf("poll after redemption: %d %v, want invalid_grant", status, body)
	}
	if resp, page := h.enterCode(csrf, da.UserCode, ""); resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "not valid, has expired or was already used") {
		t.Errorf("a used user code: %s\n%s", resp.Status, page)
	}
}

func TestDeviceFlowLDAP(t *testing.T) {
	h, _ := newLDAPHarness(t, issuer.TypeLDAP)
	cfg := h.deviceCLI()
	da, err := cfg.DeviceAuth(h.clientContext())
	if err != nil {
		t.Fatal(err)
	}
	csrf := h.verificationPage(da.VerificationURI)
	resp, page := h.enterCode(csrf, da.UserCode, "approve")
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/fd"+provider.LoginPath || !strings.Contains(page, "Log in to Corp LDAP") {
		t.Fatalf("approval led to %s %s\n%s", resp.Status, resp.Request.URL, page)
	}
	resp, err = h.browser.PostForm(h.issuerURL+provider.LoginPath, url.Values{"state": {resp.Request.URL.Query().Get("state")}, "username": {"pinny"}, "password": {"pinny-password"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/fd"+provider.DeviceCallbackPath {
		t.Fatalf("the LDAP login ended at %s %s", resp.Status, resp.Request.URL)
	}
	status, body := h.poll(da.DeviceCode)
	if status != http.StatusOK {
		t.Fatalf("poll after approval: %d %v", status, body)
	}
	if _, claims := h.idToken(body["id_token"].(string), provider.PinnipedCLIClientID); claims["username"] != "pinny" {
		t.Errorf("ID token claims %v", claims)
	}
}

func TestDeviceFlowRefusals(t *testing.T) {
	h := newHarness(t, nil)
	cfg := h.deviceCLI()
	start := func() *oauth2.DeviceAuthResponse {
		t.Helper()
		da, err := cfg.DeviceAuth(h.clientContext())
		if err != nil {
			t.Fatal(err)
		}
		return da
	}
	csrf := h.verificationPage(h.issuerURL + provider.DevicePath)

	// Each case starts requests and enters codes from the same source: each starts with the
	// source's full bursts.
	run := func(name string, f func(t *testing.T)) {
		h.endpoints.shared.DeviceCodes = provider.NewDeviceCodeLimiter(time.Now)
		h.endpoints.shared.DeviceStarts = provider.NewDeviceStartLimiter(time.Now)
		t.Run(name, f)
	}

	run("a wrong user code", func(t *testing.T) {
		for _, code := range []string{"BCDF-GHJK", "AEIO-U123", "<script>", ""} {
			if resp, page := h.enterCode(csrf, code, "approve"); resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "not valid") || strings.Contains(page, "<script>") {
				t.Errorf("user code %q: %s\n%s", code, resp.Status, page)
			}
		}
	})

	run("denied", func(t *testing.T) {
		da := start()
		if resp, page := h.enterCode(csrf, da.UserCode, "deny"); resp.StatusCode != http.StatusOK || !strings.Contains(page, "denied") {
			t.Fatalf("deny: %s\n%s", resp.Status, page)
		}
		if status, body := h.poll(da.DeviceCode); status != http.StatusBadRequest || body["error"] != "access_denied" {
			t.Errorf("poll after denial: %d %v, want access_denied", status, body)
		}
		if resp, _ := h.enterCode(csrf, da.UserCode, "approve"); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a denied code approved: %s", resp.Status)
		}
	})

	run("expired", func(t *testing.T) {
		da := start()
		h.endpoints.shared.Now = func() time.Time { return time.Now().Add(11 * time.Minute) }
		defer func() { h.endpoints.shared.Now = time.Now }()
		if resp, _ := h.enterCode(csrf, da.UserCode, "approve"); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("an expired code approved: %s", resp.Status)
		}
		if status, body := h.poll(da.DeviceCode); status != http.StatusBadRequest || body["error"] != "expired_token" {
			t.Errorf("poll after expiry: %d %v, want expired_token", status, body)
		}
	})

	run("another site posts the form", func(t *testing.T) {
		da := start()
		if resp, _ := h.enterCode("not-the-browsers-csrf", da.UserCode, "approve"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("approval without the browser's CSRF value: %s, want 403", resp.Status)
		}
		stranger := &http.Client{Transport: h.browser.Transport}
		resp, err := stranger.PostForm(h.issuerURL+provider.DevicePath, url.Values{"csrf": {csrf}, "user_code": {da.UserCode}, "action": {"approve"}})
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("approval from a browser without the cookie: %s, want 403", resp.Status)
		}
		if status, body := h.poll(da.DeviceCode); body["error"] != "authorization_pending" {
			t.Errorf("poll: %d %v, want authorization_pending", status, body)
		}
	})

	run("a user code entered too often is spent", func(t *testing.T) {
		da := start()
		for range 5 {
			if resp, _ := h.enterCode(csrf, da.UserCode, ""); resp.StatusCode != http.StatusOK {
				t.Fatalf("entry: %s", resp.Status)
			}
		}
		if resp, _ := h.enterCode(csrf, da.UserCode, "approve"); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("sixth entry: %s, want 400", resp.Status)
		}
		if status, body := h.poll(da.DeviceCode); body["error"] != "access_denied" {
			t.Errorf("poll: %d %v, want access_denied", status, body)
		}
	})

	run("a foreign state at the device callback", func(t *testing.T) {
		resp, page := h.get(h.issuerURL + provider.DeviceCallbackPath + "?code=stolen&state=made-up")
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "did not finish") {
			t.Errorf("callback with a foreign state: %s\n%s", resp.Status, page)
		}
	})

	run("a client without the grant", func(t *testing.T) {
		h.addOIDCClient(clientID, fullSpec(), clientSecret)
		if status, body := h.postTo(provider.DeviceAuthorizationPath, url.Values{"scope": {"openid"}}, clientID, clientSecret); status != http.StatusBadRequest || body["error"] != "unauthorized_client" {
			t.Errorf("device authorization of a client without the grant: %d %v", status, body)
		}
		da := start()
		status, body := h.postToken(url.Values{"grant_type": {provider.GrantDeviceCode}, "device_code": {da.DeviceCode}}, clientID, clientSecret)
		if status != http.StatusBadRequest || body["error"] != "unauthorized_client" {
			t.Errorf("poll by a client without the grant: %d %v", status, body)
		}
	})

	run("a device code polled by another client", func(t *testing.T) {
		spec := fullSpec()
		spec.AllowedGrantTypes = append(spec.AllowedGrantTypes, configv1alpha1.GrantTypeDeviceCode)
		h.addOIDCClient(clientID, spec, clientSecret)
		da := start()
		status, body := h.postToken(url.Values{"grant_type": {provider.GrantDeviceCode}, "device_code": {da.DeviceCode}}, clientID, clientSecret)
		if status != http.StatusBadRequest || body["error"] != "invalid_grant" {
			t.Errorf("another client's poll: %d %v, want invalid_grant", status, body)
		}
		if status, body := h.postToken(url.Values{"grant_type": {provider.GrantDeviceCode}, "device_code": {da.DeviceCode}}, clientID, "wrong"); status != http.StatusUnauthorized || body["error"] != "invalid_client" {
			t.Errorf("a poll with a wrong secret: %d %v, want invalid_client", status, body)
		}
	})

	run("too many device authorizations from one source", func(t *testing.T) {
		refused := 0
		for range 40 {
			if status, body := h.postTo(provider.DeviceAuthorizationPath, url.Values{"client_id": {provider.PinnipedCLIClientID}}, "", ""); status == http.StatusTooManyRequests {
				if body["error"] != "slow_down" {
					t.Errorf("refusal %v", body)
				}
				refused++
			}
		}
		if refused == 0 {
			t.Error("40 device authorizations from one source at once were all stored")
		}
	})

	run("too many codes from one source", func(t *testing.T) {
		limited := 0
		for range 30 {
			if resp, _ := h.enterCode(csrf, "BCDF-GHJK", ""); resp.StatusCode == http.StatusTooManyRequests {
				limited++
			}
		}
		if limited == 0 {
			t.Error("30 wrong codes from one source were all looked up")
		}
	})
}

func TestDeviceFlowConfidentialClient(t *testing.T) {
	h := newHarness(t, nil)
	spec := fullSpec()
	spec.AllowedGrantTypes = append(spec.AllowedGrantTypes, configv1alpha1.GrantTypeDeviceCode)
	h.addOIDCClient(clientID, spec, clientSecret)
	// golang.org/x/oauth2 sends no client authentication to the device authorization endpoint,
	// which RFC 8628 asks of a confidential client: the request is made here.
	if status, body := h.postTo(provider.DeviceAuthorizationPath, url.Values{"scope": {"openid username"}}, clientID, "wrong"); status != http.StatusUnauthorized || body["error"] != "invalid_client" {
		t.Errorf("device authorization with a wrong secret: %d %v", status, body)
	}
	status, body := h.postTo(provider.DeviceAuthorizationPath, url.Values{"scope": {"openid username"}}, clientID, clientSecret)
	if status != http.StatusOK {
		t.Fatalf("device authorization: %d %v", status, body)
	}
	da := &oauth2.DeviceAuthResponse{DeviceCode: body["device_code"].(string), UserCode: body["user_code"].(string),
		VerificationURIComplete: body["verification_uri_complete"].(string), Interval: int64(body["interval"].(float64)), Expiry: time.Now().Add(10 * time.Minute)}
	csrf := h.verificationPage(da.VerificationURIComplete)
	if resp, page := h.enterCode(csrf, da.UserCode, ""); !strings.Contains(page, `id="client">`+clientID+`<`) || strings.Contains(page, "offline_access") {
		t.Fatalf("the page shows: %s\n%s", resp.Status, page)
	}
	if resp, page := h.enterCode(csrf, da.UserCode, "approve"); resp.StatusCode != http.StatusOK || !strings.Contains(page, "Your device is logged in") {
		t.Fatalf("approval: %s\n%s", resp.Status, page)
	}
	status, body = h.postToken(url.Values{"grant_type": {provider.GrantDeviceCode}, "device_code": {da.DeviceCode}}, clientID, clientSecret)
	if status != http.StatusOK {
		t.Fatalf("poll after approval: %d %v", status, body)
	}
	if _, claims := h.idToken(body["id_token"].(string), clientID); claims["username"] != "pinny@example.com" {
		t.Errorf("claims %v", claims)
	}
}

// TestDeviceFlowIdentityProviders: with several identity providers the approval leads to the
// chooser, unless the client named one at the device authorization endpoint.
func TestDeviceFlowIdentityProviders(t *testing.T) {
	ups := &fakeUpstreams{}
	ups.add(issuer.TypeLDAP, "corp-ldap", newFakeDirectory())
	h := newHarnessWith(t, ups, ldapIDP(issuer.TypeLDAP), issuer.IdentityProvider{
		DisplayName: idpName, Type: issuer.TypeOIDC, Flows: []issuer.Flow{issuer.FlowBrowserAuthcode},
		Kind: "OIDCIdentityProvider", Name: "upstream-idp", UID: "idp-uid",
	})
	csrf := h.verificationPage(h.issuerURL + provider.DevicePath)

	da, err := h.deviceCLI().DeviceAuth(h.clientContext())
	if err != nil {
		t.Fatal(err)
	}
	if resp, page := h.enterCode(csrf, da.UserCode, "approve"); resp.Request.URL.Path != "/fd"+provider.ChooseIdentityProviderPath || len(chooserLink.FindAllString(page, -1)) != 2 {
		t.Errorf("approval without an identity provider led to %s %s; want the chooser", resp.Status, resp.Request.URL)
	}

	da, err = h.deviceCLI().DeviceAuth(h.clientContext(), oauth2.SetAuthURLParam("pinniped_idp_name", idpName), oauth2.SetAuthURLParam("pinniped_idp_type", "oidc"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, page := h.enterCode(csrf, da.UserCode, "approve"); resp.Request.URL.Path != "/fd"+provider.DeviceCallbackPath || !strings.Contains(page, "Your device is logged in") {
		t.Errorf("approval naming %s led to %s %s", idpName, resp.Status, resp.Request.URL)
	}
	if status, body := h.poll(da.DeviceCode); status != http.StatusOK {
		t.Errorf("poll: %d %v", status, body)
	}
}
