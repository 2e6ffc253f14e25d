package upstreamlogins

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sealion.dev/core/testing/syncbuffer"
	"sealion.dev/core/testing/testdeps"
	"sealion.dev/fixtures/ldap"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// execInfo is what kubectl sets for a credential plugin that may not prompt.
const execInfo = `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}`

// TestPinnipedCLIPasswordLoginWithLDAP runs the pinniped CLI built from this checkout, as kubectl
// runs it, with the cli_password flow against the Supervisor and slapd: a login, a run from the
// session cache that does not log in again, and a wrong password.
func TestPinnipedCLIPasswordLoginWithLDAP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and starts etcd, kube-apiserver and slapd as processes; skipped under -short")
	}
	_, err := ldap.FindSlapd()
	testdeps.Require(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cli := buildCLI(ctx, t)
	slapdLog := &syncbuffer.Buffer{}
	dir, err := ldap.Start(ctx, ldap.Options{Log: slapdLog})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dir.Close() }()
	sup := startLDAPSupervisor(ctx, t, dir)

	tmp := t.TempDir()
	caPath := filepath.Join(tmp, "supervisor-ca.pem")
	if err := os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: sup.server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	// run runs "pinniped login oidc" as the kubeconfig of "pinniped get kubeconfig" would, with the
	// credential cache off so that every run goes to the session cache.
	run := func(name, sessionCache, password string) (stdout, stderr string, err error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, cli, "login", "oidc", "--issuer="+sup.issuerURL, "--ca-bundle="+caPath,
			"--client-id="+provider.PinnipedCLIClientID, "--upstream-identity-provider-name="+ldapIDPName,
			"--upstream-identity-provider-type=ldap", "--upstream-identity-provider-flow=cli_password",
			"--session-cache="+sessionCache, "--credential-cache=")
		cmd.Env = append(os.Environ(), "HOME="+tmp, "PINNIPED_DEBUG=true", "KUBERNETES_EXEC_INFO="+execInfo,
			"PINNIPED_USERNAME=pinny", "PINNIPED_PASSWORD="+password)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		began := time.Now()
		err = cmd.Run()
		t.Logf("%s: pinniped login oidc took %s", name, time.Since(began).Round(time.Millisecond))
		return out.String(), errOut.String(), err
	}
	// userBinds counts the attempts to bind as pinny: slapd logs each bind request once with its
	// method, and once more with its mechanism when it succeeds.
	userBinds := func() int {
		return strings.Count(slapdLog.String(), `BIND dn="`+ldap.UserDN("pinny")+`" method=`)
	}

	sessions := filepath.Join(tmp, "sessions.yaml")
	stdout, stderr, err := run("first login", sessions, "fixture-password")
	if err != nil {
		t.Fatalf("first login: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "pinniped: logging in with the cli_password flow") {
		t.Errorf("stderr does not show a cli_password login:\n%s", stderr)
	}
	first := sup.verify(ctx, t, execCredentialToken(t, stdout))
	if first["username"] != "pinny" || !slices.Equal(strs(first["groups"]), []string{"seals", "walruses"}) {
		t.Errorf("ID token claims %v; want pinny in seals and walruses", first)
	}
	if info, err := os.Stat(sessions); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("session cache %s: %v %v", sessions, info, err)
	}
	waitFor(t, "the login's bind as pinny in slapd's log", func() bool { return userBinds() == 1 })

	// The Supervisor's ID tokens live 2 minutes, less than the 10 the CLI wants left on one, so
	// the cached session is refreshed: the Supervisor searches the directory again, but nobody
	// binds as the user.
	stdout, stderr, err = run("run from the session cache", sessions, "fixture-password")
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "pinniped: refreshing the session with its refresh token") ||
		strings.Contains(stderr, "logging in with the") || strings.Contains(stderr, "refreshing the session failed") {
		t.Errorf("the second run did not come from the session's refresh token:\n%s", stderr)
	}
	if c := sup.verify(ctx, t, execCredentialToken(t, stdout)); c["sub"] != first["sub"] || c["username"] != "pinny" ||
		!slices.Equal(strs(c["groups"]), []string{"seals", "walruses"}) {
		t.Errorf("cached run's claims %v; want those of the login, %v", c, first)
	}

	// A wrong password, with a session cache of its own so that a login is needed.
	stdout, stderr, err = run("wrong password", filepath.Join(tmp, "other-sessions.yaml"), "wrong-password")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("wrong password: %v; want a non-zero exit status", err)
	}
	if stdout != "" {
		t.Errorf("wrong password printed %q; want nothing on stdout", stdout)
	}
	const wantErr = "Error: could not complete the OIDC login: the issuer refused the login: access_denied: " +
		"The resource owner or authorization server denied the request. Username/password not accepted by LDAP provider.\n"
	if !strings.HasSuffix(stderr, wantErr) {
		t.Errorf("wrong password stderr:\n%s\nwant it to end with:\n%s", stderr, wantErr)
	}
	// slapd logs in order: the cached run's bind, had there been one, would be counted before
	// the wrong password's.
	waitFor(t, "the wrong password's bind in slapd's log", func() bool { return userBinds() >= 2 })
	if n := userBinds(); n != 2 {
		t.Errorf("slapd saw %d binds as pinny; want 2 (the login and the wrong password, none for the cached run)", n)
	}
}

// execCredentialToken returns the token of the ExecCredential that out holds, in the version
// KUBERNETES_EXEC_INFO asked for.
func execCredentialToken(t *testing.T, out string) string {
	t.Helper()
	var cred struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Status     struct {
			Token               string `json:"token"`
			ExpirationTimestamp string `json:"expirationTimestamp"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &cred); err != nil {
		t.Fatalf("no ExecCredential in the output: %v\n%s", err, out)
	}
	if cred.APIVersion != "client.authentication.k8s.io/v1" || cred.Kind != "ExecCredential" ||
		cred.Status.Token == "" || cred.Status.ExpirationTimestamp == "" {
		t.Fatalf("ExecCredential %+v: want a client.authentication.k8s.io/v1 one with a token and its expiry", cred)
	}
	return cred.Status.Token
}

// waitFor polls cond for a few seconds: slapd's log reaches the test through a pipe.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// buildCLI builds the pinniped CLI of this checkout into the test's directory: the CLI is a
// client of the Supervisor, run as a program, never imported.
func buildCLI(ctx context.Context, t *testing.T) string {
	t.Helper()
	cli := filepath.Join(t.TempDir(), "pinniped")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", cli, "sealion.dev/cli/cmd/pinniped")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the pinniped CLI: %v\n%s", err, out)
	}
	return cli
}
