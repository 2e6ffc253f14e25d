package oidc

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sealion.dev/cli/internal/deps"
	"sealion.dev/cli/internal/testing/fakeissuer"
	"sealion.dev/cli/pkg/conciergeclient"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	"sealion.dev/core/certauthority"
)

const execInfoV1 = `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false,"cluster":{"server":"https://cluster.example:6443","certificate-authority-data":"Q0E="}}}`

// env is one user's environment: a home directory, variables and the issuer double as browser.
type env struct {
	t       *testing.T
	iss     *fakeissuer.Issuer
	home    string
	vars    map[string]string
	mu      sync.Mutex
	browsed int
	// exchanged records the tokens given to the Concierge.
	exchanged []string
}

func newEnv(t *testing.T, opts fakeissuer.Options) *env {
	return &env{t: t, iss: fakeissuer.New(t, opts), home: t.TempDir(), vars: map[string]string{}}
}

func (e *env) openURL(authURL string) error {
	e.mu.Lock()
	e.browsed++
	e.mu.Unlock()
	go func() {
		if _, _, err := e.iss.Browse(authURL); err != nil {
			e.t.Errorf("browsing %s: %v", authURL, err)
		}
	}()
	return nil
}

func (e *env) exchange(_ context.Context, _ conciergeclient.Config, token string) (*loginv1alpha1.ClusterCredential, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.exchanged = append(e.exchanged, token)
	return &loginv1alpha1.ClusterCredential{ExpirationTimestamp: metav1.NewTime(time.Now().Add(5 * time.Minute).Truncate(time.Second)),
		ClientCertificateData: "CERT", ClientKeyData: "KEY"}, nil
}

// args are the flags every run needs: the issuer and its CA.
func (e *env) args(more ...string) []string {
	return append([]string{"--issuer=" + e.iss.URL, "--ca-bundle-data=" + base64.StdEncoding.EncodeToString(e.iss.CABundle)}, more...)
}

type execCredential struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Status     struct {
		Token                 string `json:"token"`
		ExpirationTimestamp   string `json:"expirationTimestamp"`
		ClientCertificateData string `json:"clientCertificateData"`
	} `json:"status"`
}

// run executes the command as kubectl would.
func (e *env) run(args ...string) (*execCredential, string, error) {
	e.t.Helper()
	var out, errOut bytes.Buffer
	d := deps.Deps{
		Out: &out, ErrOut: &errOut,
		Now:           time.Now,
		Getenv:        func(k string) string { return e.vars[k] },
		Args:          append([]string{"login", "oidc"}, args...),
		HomeDir:       func() (string, error) { return e.home, nil },
		ExchangeToken: e.exchange,
		OpenURL:       e.openURL,
	}
	cmd := NewCommand(d)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cmd.ExecuteContext(ctx); err != nil {
		return nil, errOut.String(), err
	}
	var cred execCredential
	if err := json.Unmarshal(out.Bytes(), &cred); err != nil {
		e.t.Fatalf("output %q: %v", out.String(), err)
	}
	if cred.Kind != "ExecCredential" {
		e.t.Errorf("kind %q", cred.Kind)
	}
	return &cred, errOut.String(), nil
}

func (e *env) browserCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.browsed
}

// claims decodes a JWT's payload.
func claims(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a JWT", jwt)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBrowserLoginWritesTheIDToken(t *testing.T) {
	e := newEnv(t, fakeissuer.Options{FormPost: true})
	e.vars["KUBERNETES_EXEC_INFO"] = execInfoV1
	cred, stderr, err := e.run(e.args("--scopes=openid,offline_access,groups")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if cred.APIVersion != "client.authentication.k8s.io/v1" {
		t.Errorf("apiVersion %s, want the v1 kubectl asked for", cred.APIVersion)
	}
	c := claims(t, cred.Status.Token)
	if c["username"] != fakeissuer.Username || c["aud"] != DefaultClientID {
		t.Errorf("ID token claims %v", c)
	}
	exp, err := time.Parse(time.RFC3339, cred.Status.ExpirationTimestamp)
	if err != nil || exp.Unix() != int64(c["exp"].(float64)) {
		t.Errorf("expirationTimestamp %q, want the ID token's exp %v", cred.Status.ExpirationTimestamp, c["exp"])
	}
	if !strings.Contains(stderr, "Log in by visiting this link:") {
		t.Errorf("stderr lacks the login URL:\n%s", stderr)
	}

	sessions := filepath.Join(e.home, ".config", "pinniped", "sessions.yaml")
	info, err := os.Stat(sessions)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("session cache %s: %v %v", sessions, info, err)
	}
	if data, _ := os.ReadFile(sessions); !strings.Contains(string(data), "kind: SessionCache") || !strings.Contains(string(data), "redirect_uri: http://localhost:0/callback") {
		t.Errorf("session cache:\n%s", data)
	}

	// The credential cache answers the same call; the issuer is not even asked.
	e.iss.Close()
	again, _, err := e.run(e.args("--scopes=openid,offline_access,groups")...)
	if err != nil || again.Status.Token != cred.Status.Token {
		t.Fatalf("second run: %v, token equal: %v", err, again != nil && again.Status.Token == cred.Status.Token)
	}
}

func TestSessionCacheWithoutCredentialCache(t *testing.T) {
	e := newEnv(t, fakeissuer.Options{})
	e.vars["XDG_CONFIG_HOME"] = filepath.Join(e.home, "xdg")
	e.vars["PINNIPED_DEBUG"] = "true"
	args := e.args("--credential-cache=", "--skip-browser=false")
	first, _, err := e.run(args...)
	if err != nil {
		t.Fatal(err)
	}
	second, stderr, err := e.run(args...)
	if err != nil {
		t.Fatal(err)
	}
	if second.Status.Token != first.Status.Token || e.browserCount() != 1 || e.iss.Counts().Authorizations != 1 {
		t.Errorf("the second run did not come from the session cache (browser opened %d times)", e.browserCount())
	}
	if !strings.Contains(stderr, "pinniped: using the cached session of "+e.iss.URL) {
		t.Errorf("debug output lacks the cache hit:\n%s", stderr)
	}
	if _, err := os.Stat(filepath.Join(e.home, "xdg", "pinniped", "sessions.yaml")); err != nil {
		t.Errorf("the session cache is not under $XDG_CONFIG_HOME: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.home, ".config", "pinniped", "credentials.yaml")); !os.IsNotExist(err) {
		t.Errorf("a disabled credential cache was written: %v", err)
	}
}

func TestCorruptSessionCacheIsReplaced(t *testing.T) {
	e := newEnv(t, fakeissuer.Options{})
	path := filepath.Join(e.home, "sessions.yaml")
	if err := os.WriteFile(path, []byte("{{{ not yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := e.run(e.args("--session-cache="+path, "--credential-cache=", "--debug-session-cache")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "is corrupt, so it is replaced") {
		t.Errorf("stderr lacks the debug note:\n%s", stderr)
	}
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), "kind: SessionCache") {
		t.Errorf("the corrupt file was not replaced:\n%s", data)
	}
}

func TestDebugSessionCacheLogsReadsAndWrites(t *testing.T) {
	e := newEnv(t, fakeissuer.Options{})
	path := filepath.Join(e.home, "sessions.yaml")
	args := e.args("--session-cache="+path, "--credential-cache=", "--debug-session-cache")
	first, stderr, err := e.run(args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pinniped: session cache: using " + path, "no session found for issuer " + e.iss.URL, "stored the session for issuer " + e.iss.URL} {
		if !strings.Contains(stderr, want) {
			t.Errorf("first run's stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, first.Status.Token) {
		t.Error("the debug log shows the ID token")
	}
	if _, stderr, err = e.run(args...); err != nil {
		t.Fatal(err)
	}
	if want := "found the session for issuer " + e.iss.URL; !strings.Contains(stderr, want) {
		t.Errorf("second run's stderr lacks %q:\n%s", want, stderr)
	}
	// Without the flag the cache says nothing.
	if _, stderr, err = e.run(e.args("--session-cache="+path, "--credential-cache=")...); err != nil || strings.Contains(stderr, "session cache") {
		t.Errorf("err %v, stderr without --debug-session-cache:\n%s", err, stderr)
	}
}

// TestRepeatedCABundle names the issuer's CA file and another one, as repeated flags and
// comma-separated, in both orders: the issuer is trusted whichever file holds its CA.
func TestRepeatedCABundle(t *testing.T) {
	e := newEnv(t, fakeissuer.Options{})
	issuerCA, otherCA := filepath.Join(e.home, "issuer.pem"), filepath.Join(e.home, "other.pem")
	other, err := certauthority.New("other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string][]byte{issuerCA: e.iss.CABundle, otherCA: other.Bundle()} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, caArgs := range [][]string{
		{"--ca-bundle=" + otherCA, "--ca-bundle=" + issuerCA},
		{"--ca-bundle=" + issuerCA, "--ca-bundle=" + otherCA},
		{"--ca-bundle=" + otherCA + "," + issuerCA},
	} {
		args := append([]string{"--issuer=" + e.iss.URL, "--credential-cache=", "--session-cache=" + filepath.Join(e.home, "s.yaml")}, caArgs...)
		if _, stderr, err := e.run(args...); err != nil {
			t.Errorf("%v: %v\n%s", caArgs, err, stderr)
		}
	}
	_, _, err = e.run("--issuer="+e.iss.URL, "--credential-cache=", "--ca-bundle="+otherCA)
	if err == nil || !strings.Contains(err.Error(), "give the issuer's CA bundle with --ca-bundle") {
		t.Errorf("with the other CA only: err = %v", err)
	}
}

func TestSkipListenNeedsATerminal(t *testing.T) {
	e := newEnv(t, fakeissuer.Options{})
	// No localhost listener and no terminal to paste the code on: the browser's redirect has nowhere to go.
	_, _, err := e.run(e.args("--skip-listen", "--credential-cache=", "--session-cache="+filepath.Join(e.home, "s.yaml"))...)
	if err == nil || !strings.Contains(err.Error(), "no way to receive the authorization code") {
		t.Fatalf("err = %v", err)
	}
	if e.browserCount() != 0 {
		t.Error("the browser was opened although the code could not be received")
	}
}

func TestConciergeExchange(t *testing.T) {
	e := newEnv(t, fakeissuer.Options{})
	e.vars["KUBERNETES_EXEC_INFO"] = execInfoV1
	args := e.args("--enable-concierge", "--concierge-authenticator-type=jwt", "--concierge-authenticator-name=dex",
		"--concierge-is-cluster-scoped=true", "--concierge-namespace=old")
	cred, _, err := e.run(args...)
	if err != nil {
		t.Fatal(err)
	}
	if cred.Status.ClientCertificateData != "CERT" || cred.Status.Token != "" || len(e.exchanged) != 1 {
		t.Fatalf("credential %+v after %d exchanges", cred.Status, len(e.exchanged))
	}
	if c := claims(t, e.exchanged[0]); c["aud"] != DefaultClientID || c["username"] != fakeissuer.Username {
		t.Errorf("the Concierge got a token with claims %v", c)
	}
	if _, _, err := e.run(args...); err != nil || len(e.exchanged) != 1 {
		t.Errorf("second run: %v, %d exchanges; want the credential cache to answer", err, len(e.exchanged))
	}
}

func TestPasswordFlowAndTokenExchange(t *testing.T) {
	e := newEnv(t, fakeissuer.Options{Supervisor: true, IdentityProviders: []fakeissuer.IdentityProvider{
		{Name: "my-ldap", Type: "ldap", Flows: []string{"browser_authcode", "cli_password"}},
	}})
	e.vars["PINNIPED_USERNAME"], e.vars["PINNIPED_PASSWORD"] = fakeissuer.Username, fakeissuer.Password
	// The environment overrides the flag, and the flag the identity provider's preference.
	e.vars["PINNIPED_UPSTREAM_IDENTITY_PROVIDER_FLOW"] = "cli_password"
	cred, stderr, err := e.run(e.args("--upstream-identity-provider-name=my-ldap", "--upstream-identity-provider-type=ldap",
		"--upstream-identity-provider-flow=browser_authcode", "--request-audience=cluster-1", "--credential-cache=")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if c := claims(t, cred.Status.Token); c["aud"] != "cluster-1" {
		t.Errorf("ID token audience %v, want cluster-1", c["aud"])
	}
	if e.browserCount() != 0 || e.iss.Counts().TokenExchanges != 1 {
		t.Errorf("browser opened %d times, counts %+v", e.browserCount(), e.iss.Counts())
	}
}

func TestErrors(t *testing.T) {
	e := newEnv(t, fakeissuer.Options{})
	tests := []struct {
		name    string
		args    []string
		vars    map[string]string
		wantErr string
	}{
		{name: "no issuer", args: nil, wantErr: `required flag(s) "issuer" not set`},
		{name: "untrusted issuer", args: []string{"--issuer=" + e.iss.URL},
			wantErr: "x509: certificate signed by unknown authority (give the issuer's CA bundle with --ca-bundle or --ca-bundle-data)"},
		{name: "bad CA data", args: e.args("--ca-bundle-data=!!"), wantErr: "decoding --ca-bundle-data"},
		{name: "CA data without certificates", args: []string{"--issuer=" + e.iss.URL, "--ca-bundle-data=" + base64.StdEncoding.EncodeToString([]byte("nope"))}, wantErr: "holds no PEM certificate"},
		{name: "missing CA file", args: e.args("--ca-bundle=/nonexistent/ca.pem"), wantErr: "reading --ca-bundle"},
		{name: "bad flow", args: e.args(), vars: map[string]string{"PINNIPED_UPSTREAM_IDENTITY_PROVIDER_FLOW": "device"},
			wantErr: `invalid --upstream-identity-provider-flow (or $PINNIPED_UPSTREAM_IDENTITY_PROVIDER_FLOW) "device"`},
		{name: "bad login flow", args: e.args("--flow=pigeon"), wantErr: `invalid --flow "pigeon": must be browser or device`},
		{name: "Concierge without authenticator", args: e.args("--enable-concierge", "--concierge-authenticator-type=jwt", "--concierge-endpoint=https://c"),
			wantErr: "--concierge-authenticator-name is required"},
		{name: "password flow without credentials", args: e.args("--upstream-identity-provider-flow=cli_password", "--credential-cache="),
			wantErr: "there is no terminal to prompt for them (or set $PINNIPED_USERNAME and $PINNIPED_PASSWORD)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.vars, e.home = tt.vars, t.TempDir()
			_, _, err := e.run(tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	if e.browserCount() != 0 {
		t.Errorf("a failed run opened the browser")
	}
}
