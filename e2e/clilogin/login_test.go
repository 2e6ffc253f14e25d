package clilogin

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"sigs.k8s.io/yaml"

	"sealion.dev/core/testing/testdeps"
	"sealion.dev/e2e/steps"
	"sealion.dev/fixtures/browser"
	"sealion.dev/fixtures/dex"
)

// TestLoginOIDCWithDex logs in once through Dex's form in Chromium, then checks that the next
// run comes from the session cache and that an expired ID token is refreshed, both without a
// browser.
func TestLoginOIDCWithDex(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and starts Dex and headless Chromium as processes; skipped under -short")
	}
	chromium, err := browser.FindChromium()
	testdeps.Require(t, err)
	// The first run builds Dex from source, which takes minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cli, err := steps.PinnipedCLI()
	if err != nil {
		t.Fatal(err)
	}
	idp, err := dex.Start(ctx, dex.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idp.Close() })
	b, err := browser.Start(ctx, browser.Options{ExecPath: chromium, TrustedCABundle: idp.CABundle})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })

	user := idp.Users[0]
	home := t.TempDir()
	sessions := filepath.Join(home, "sessions.yaml")
	// The credential cache is off: each run must go through the session cache.
	args := []string{"login", "oidc", "--issuer=" + idp.IssuerURL, "--client-id=" + dex.PublicClientID,
		"--scopes=openid,offline_access,email,profile,groups", "--ca-bundle=" + idp.CABundlePath,
		"--skip-browser", "--session-cache=" + sessions, "--credential-cache="}
	plugin := func(ctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(ctx, cli, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "PINNIPED_DEBUG=true", "BROWSER=false", "KUBERNETES_EXEC_INFO=")
		return cmd
	}
	verifier := verifierFor(ctx, t, idp)

	began := time.Now()
	out, err := steps.RunWithBrowserLogin(ctx, plugin(ctx), b, browser.Login{Username: user.Email, Password: user.Password})
	if err != nil {
		t.Fatalf("browser login: %v\n%s", err, out)
	}
	t.Logf("login oidc with the browser: %s", time.Since(began).Round(time.Millisecond))
	first := tokenOf(t, out)
	checkIdentity(ctx, t, verifier, first, user)
	if info, err := os.Stat(sessions); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("session cache %s: %v %v", sessions, info, err)
	}

	t.Run("the next run comes from the session cache", func(t *testing.T) {
		began := time.Now()
		stdout, stderr := runWithoutBrowser(ctx, t, plugin)
		t.Logf("login oidc from the session cache: %s", time.Since(began).Round(time.Millisecond))
		if got := tokenOf(t, stdout); got != first {
			t.Error("the cached run returned another ID token")
		}
		if !strings.Contains(stderr, "pinniped: using the cached session") {
			t.Errorf("stderr does not show the cache hit:\n%s", stderr)
		}
	})

	t.Run("an expired ID token is refreshed", func(t *testing.T) {
		expireIDToken(t, sessions)
		began := time.Now()
		stdout, stderr := runWithoutBrowser(ctx, t, plugin)
		t.Logf("login oidc with a refresh: %s", time.Since(began).Round(time.Millisecond))
		refreshed := tokenOf(t, stdout)
		if refreshed == first {
			t.Error("the refresh returned the expired ID token")
		}
		checkIdentity(ctx, t, verifier, refreshed, user)
		if !strings.Contains(stderr, "pinniped: refreshing the session with its refresh token") || strings.Contains(stderr, "refreshing the session failed") {
			t.Errorf("stderr does not show a successful refresh:\n%s", stderr)
		}
		if !strings.Contains(readFile(t, sessions), refreshed) {
			t.Error("the session cache does not hold the refreshed ID token")
		}
	})
}

// runWithoutBrowser runs the plugin, which must finish on its own: it would otherwise print a
// login URL and wait for a browser.
func runWithoutBrowser(ctx context.Context, t *testing.T, plugin func(context.Context) *exec.Cmd) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := plugin(ctx)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "Log in by visiting this link") {
		t.Errorf("the plugin asked for a browser login:\n%s", stderr.String())
	}
	return stdout.String(), stderr.String()
}

// tokenOf returns the ID token of the ExecCredential that out starts with.
func tokenOf(t *testing.T, out string) string {
	t.Helper()
	var cred struct {
		APIVersion string `json:"apiVersion"`
		Status     struct {
			Token               string `json:"token"`
			ExpirationTimestamp string `json:"expirationTimestamp"`
		} `json:"status"`
	}
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&cred); err != nil {
		t.Fatalf("no ExecCredential in the output: %v\n%s", err, out)
	}
	if cred.APIVersion != "client.authentication.k8s.io/v1beta1" || cred.Status.Token == "" || cred.Status.ExpirationTimestamp == "" {
		t.Fatalf("ExecCredential %+v lacks a token or its expiry", cred)
	}
	return cred.Status.Token
}

func verifierFor(ctx context.Context, t *testing.T, idp *dex.Dex) *oidc.IDTokenVerifier {
	t.Helper()
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, idp.HTTPClient()), idp.IssuerURL)
	if err != nil {
		t.Fatal(err)
	}
	return provider.Verifier(&oidc.Config{ClientID: dex.PublicClientID})
}

// checkIdentity verifies the ID token with Dex's keys and checks the user's email and groups.
func checkIdentity(ctx context.Context, t *testing.T, verifier *oidc.IDTokenVerifier, raw string, user dex.User) {
	t.Helper()
	token, err := verifier.Verify(ctx, raw)
	if err != nil {
		t.Fatalf("the ID token does not verify: %v", err)
	}
	var claims struct {
		Email  string   `json:"email"`
		Name   string   `json:"name"`
		Groups []string `json:"groups"`
	}
	if err := token.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if claims.Email != user.Email || claims.Name != user.Username || !slices.Equal(claims.Groups, user.Groups) {
		t.Errorf("claims %+v, want email %s, name %s, groups %v", claims, user.Email, user.Username, user.Groups)
	}
}

// expireIDToken makes the cached ID token look expired, as it would be a day later.
func expireIDToken(t *testing.T, path string) {
	t.Helper()
	var f map[string]any
	if err := yaml.Unmarshal([]byte(readFile(t, path)), &f); err != nil {
		t.Fatal(err)
	}
	sessions, _ := f["sessions"].([]any)
	if len(sessions) != 1 {
		t.Fatalf("%d sessions in %s, want 1", len(sessions), path)
	}
	id := sessions[0].(map[string]any)["tokens"].(map[string]any)["id"].(map[string]any)
	id["expiryTimestamp"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	data, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
