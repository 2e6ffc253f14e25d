package oidclogin_test

import (
	"io"
	"runtime"
	"strings"
	"testing"

	"sealion.dev/cli/internal/testing/fakeissuer"
	"sealion.dev/cli/pkg/oidclogin"
	"sealion.dev/core/testing/syncbuffer"
)

func TestDeviceLogin(t *testing.T) {
	iss := fakeissuer.New(t, fakeissuer.Options{Supervisor: true, Device: true, DevicePolls: []string{"authorization_pending"},
		IdentityProviders: []fakeissuer.IdentityProvider{{Name: "my-oidc", Type: "oidc", Flows: []string{"browser_authcode"}}}})
	var out syncbuffer.Buffer
	cfg := config(iss, &out, func(string) error { t.Error("the device flow opened a browser"); return nil })
	cfg.LoginFlow = oidclogin.LoginFlowDevice
	cfg.UpstreamIdentityProviderName = "my-oidc"
	cache := newMemCache()
	cfg.SessionCache = cache
	tok, err := login(t, cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	checkIdentity(t, tok, clientID)
	if tok.RefreshToken == nil || cache.only(t).RefreshToken == nil {
		t.Error("the device login's session was not cached with its refresh token")
	}
	shown := out.String()
	for _, want := range []string{iss.URL + fakeissuer.VerificationURI + "\n", "enter the code " + fakeissuer.UserCode, "?user_code=" + fakeissuer.UserCode} {
		if !strings.Contains(shown, want) {
			t.Errorf("the user was not shown %q:\n%s", want, shown)
		}
	}
	if strings.Contains(shown, "█") || strings.Contains(shown, "▀") {
		t.Errorf("a QR code was drawn on a writer that is no terminal:\n%s", shown)
	}
	if c := iss.Counts(); c.DevicePolls != 2 || c.CodeExchanges != 0 {
		t.Errorf("counts %+v, want 2 polls (pending, then tokens) and no code exchange", c)
	}
	auths := iss.Authorizations()
	if len(auths) != 1 || auths[0].Get("pinniped_idp_name") != "my-oidc" || auths[0].Get("scope") != "groups offline_access openid username" ||
		auths[0].Get("code_challenge") != "" || auths[0].Get("nonce") != "" {
		t.Errorf("device authorization requests %v", auths)
	}
}

func TestDeviceLoginRefused(t *testing.T) {
	for answer, want := range map[string]string{
		"access_denied": "the device login was denied on the verification page",
		"expired_token": "the code expired before the login was approved",
	} {
		t.Run(answer, func(t *testing.T) {
			iss := fakeissuer.New(t, fakeissuer.Options{Device: true, DevicePolls: []string{answer}})
			cfg := config(iss, &syncbuffer.Buffer{}, nil)
			cfg.LoginFlow = oidclogin.LoginFlowDevice
			if _, err := login(t, cfg); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v, want %q", err, want)
			}
		})
	}
}

// TestDeviceLoginByDefault: without a browser to open (no $BROWSER, no graphical session) nor a
// terminal to paste a code on, the device flow is chosen; with a browser, or with SkipBrowser
// (the user opens the printed URL), the browser's.
func TestDeviceLoginByDefault(t *testing.T) {
	if !browserless() {
		t.Skip("macOS and Windows always have a browser to open")
	}
	t.Setenv("BROWSER", "")
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	iss := fakeissuer.New(t, fakeissuer.Options{Device: true})
	cfg := config(iss, &syncbuffer.Buffer{}, func(string) error { t.Error("a browser was opened"); return nil })
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	if c := iss.Counts(); c.DevicePolls != 1 || c.CodeExchanges != 0 {
		t.Errorf("counts %+v, want a device login", c)
	}

	pr, pw := io.Pipe()
	defer pw.Close()
	cfg = config(iss, pw, func(string) error { t.Error("a browser was opened despite SkipBrowser"); return nil })
	cfg.SkipBrowser = true
	go func() {
		if _, _, err := iss.Browse(readURL(pr)); err != nil {
			t.Errorf("browsing: %v", err)
		}
	}()
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	if c := iss.Counts(); c.DevicePolls != 1 || c.CodeExchanges != 1 {
		t.Errorf("counts %+v, want a browser login with SkipBrowser", c)
	}

	t.Setenv("BROWSER", "true")
	b := &browser{iss: iss}
	cfg = config(iss, &syncbuffer.Buffer{}, b.open)
	if _, err := login(t, cfg); err != nil {
		t.Fatal(err)
	}
	if c := iss.Counts(); c.DevicePolls != 1 || c.CodeExchanges != 2 {
		t.Errorf("counts %+v, want a browser login with $BROWSER set", c)
	}
}

func TestDeviceLoginErrors(t *testing.T) {
	plain := fakeissuer.New(t, fakeissuer.Options{})
	cfg := config(plain, &syncbuffer.Buffer{}, nil)
	cfg.LoginFlow = oidclogin.LoginFlowDevice
	if _, err := login(t, cfg); err == nil || !strings.Contains(err.Error(), "offers no device authorization endpoint") {
		t.Errorf("device login at an issuer without the endpoint: %v", err)
	}
	cfg.Flow = oidclogin.FlowCLIPassword
	if _, err := login(t, cfg); err == nil || !strings.Contains(err.Error(), "cannot use the upstream flow cli_password") {
		t.Errorf("device login with the cli_password flow: %v", err)
	}
	cfg.Flow, cfg.LoginFlow = "", "carrier-pigeon"
	if _, err := login(t, cfg); err == nil || !strings.Contains(err.Error(), `unknown login flow "carrier-pigeon"`) {
		t.Errorf("an unknown login flow: %v", err)
	}
	ldap := fakeissuer.New(t, fakeissuer.Options{Supervisor: true, Device: true,
		IdentityProviders: []fakeissuer.IdentityProvider{{Name: "my-ldap", Type: "ldap", Flows: []string{"cli_password"}}}})
	cfg = config(ldap, &syncbuffer.Buffer{}, nil)
	cfg.LoginFlow, cfg.UpstreamIdentityProviderName = oidclogin.LoginFlowDevice, "my-ldap"
	if _, err := login(t, cfg); err == nil || !strings.Contains(err.Error(), `identity provider "my-ldap" has no browser login`) {
		t.Errorf("device login with an identity provider without a browser login: %v", err)
	}
}

// browserless reports whether this system can be without a browser to open: not macOS or
// Windows, whose own opener is always there.
func browserless() bool { return runtime.GOOS != "darwin" && runtime.GOOS != "windows" }
