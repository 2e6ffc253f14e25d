package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	"sealion.dev/e2e/steps"
	"sealion.dev/fixtures/browser"
	"sealion.dev/fixtures/dex"
)

// TestCLIStaticLogin is the admin and user path with a static token: `pinniped get kubeconfig`
// discovers the Concierge and the webhook authenticator, and kubectl logs in through
// `pinniped login static`, whichever strategy the cluster uses.
func TestCLIStaticLogin(t *testing.T) {
	var user cliUser
	f := features.New("pinniped login static with the local-user-authenticator").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			setUpLocalUsers(ctx, t, cfg)
			bindGroup(ctx, t, cfg, "e2e-cli-static-seals", "seals")
			user = newCLIUser(ctx, t, cfg, "--static-token", "pinny:correct horse",
				"--concierge-authenticator-type", "webhook", "--concierge-authenticator-name", "local-users")
			return ctx
		}).
		Assess("kubectl works within the user's RBAC", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			eventually(ctx, t, func() error { _, err := user.kubectl(ctx, "get", "pods", "-n", "kube-system"); return err })
			if _, err := user.kubectl(ctx, "get", "secrets", "-n", "kube-system"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
				t.Errorf("listing secrets: %v, want Forbidden", err)
			}
			return ctx
		}).
		Assess("pinniped whoami shows the identity", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			out, err := user.whoami(ctx)
			if err != nil || !strings.Contains(out, "username: pinny") || !strings.Contains(out, "- seals") {
				t.Errorf("whoami: %v\n%s", err, out)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestCLIBrowserLogin is the path of issue 5: the admin trusts Dex with a JWTAuthenticator and
// hands out a kubeconfig; the user's first kubectl starts `pinniped login oidc`, which prints the
// authorization URL that a real headless Chromium completes; later calls run from the caches. Dex
// runs on this machine, or in the cluster where its pods cannot reach this machine
// (steps.StartDexForCluster).
func TestCLIBrowserLogin(t *testing.T) {
	var (
		idp      *dex.Dex
		chromium *browser.Browser
		outsider = dex.User{Email: "walter@example.com", Username: "walter", Password: "walrus-password", Groups: []string{"walruses-only"}}
	)
	f := features.New("pinniped login oidc through Dex in a browser").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var err error
			if idp, err = steps.StartDexForCluster(ctx, []dex.User{dex.DefaultUser, outsider}); err != nil {
				t.Fatal(err)
			}
			if chromium, err = browser.Start(ctx, browser.Options{TrustedCABundle: idp.CABundle, ProxyServer: idp.ProxyURL}); err != nil {
				t.Fatal(err)
			}
			if err := steps.TrustDex(ctx, cfg, "dex", idp); err != nil {
				t.Fatal(err)
			}
			bindGroup(ctx, t, cfg, "e2e-cli-dex-seals", "seals")
			return ctx
		}).
		Assess("the first kubectl logs in through the browser, later ones run from the caches", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			user := newOIDCUser(ctx, t, cfg, idp)
			began := time.Now()
			if out, err := user.kubectlWithBrowserLogin(ctx, t, chromium, dexLogin(dex.DefaultUser), "get", "pods", "-n", "kube-system"); err != nil {
				t.Fatalf("first kubectl: %v\n%s", err, out)
			}
			t.Logf("first kubectl, browser login included: %s", time.Since(began).Round(time.Millisecond))

			began = time.Now()
			out, stderr, err := user.kubectlOutput(ctx, "get", "pods", "-n", "kube-system")
			if err != nil || strings.Contains(stderr, "https://") {
				t.Fatalf("second kubectl should need no login: %v\n%s%s", err, out, stderr)
			}
			t.Logf("second kubectl, from the caches: %s", time.Since(began).Round(time.Millisecond))

			// The certificate lives 5 minutes; instead of waiting, age the cached one past its expiry.
			before := user.cachedCertificates(t)
			user.expireCachedCredentials(t)
			out, stderr, err = user.kubectlOutput(ctx, "get", "pods", "-n", "kube-system")
			if err != nil || strings.Contains(stderr, "https://") {
				t.Fatalf("after the certificate expired, kubectl should renew it silently: %v\n%s%s", err, out, stderr)
			}
			if after := user.cachedCertificates(t); len(after) != 1 || len(before) != 1 || after[0] == before[0] {
				t.Errorf("the expired certificate was not replaced: before %d, after %d entries", len(before), len(after))
			}

			if out, err := user.whoami(ctx); err != nil ||
				!strings.Contains(out, "username: "+dex.DefaultUser.Email) || !strings.Contains(out, "- seals") {
				t.Errorf("whoami: %v\n%s", err, out)
			}
			return ctx
		}).
		Assess("a user outside the group logs in but is refused", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			user := newOIDCUser(ctx, t, cfg, idp)
			out, err := user.kubectlWithBrowserLogin(ctx, t, chromium, dexLogin(outsider), "get", "pods", "-n", "kube-system")
			if err == nil || !strings.Contains(out, `"walter@example.com" cannot list resource "pods"`) {
				t.Errorf("kubectl as %s: %v\n%s, want Forbidden", outsider.Email, err, out)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if chromium != nil {
				_ = chromium.Close()
			}
			if idp != nil {
				_ = idp.Close()
			}
			_, _ = steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "delete", "--ignore-not-found", "jwtauthenticator/dex")
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// cliUser is a user of this machine with a kubeconfig from `pinniped get kubeconfig` and a home
// of their own, so caches start empty.
type cliUser struct {
	cli, home, kubeconfig string
	credentialCache       string
	// sessionCache is the OIDC session cache, when the login is one; extraEnv is added to the
	// user's environment.
	sessionCache string
	extraEnv     []string
	// apiGroupSuffix is the Concierge's, which whoami must be told, as get kubeconfig is.
	apiGroupSuffix string
}

// newCLIUser runs `pinniped get kubeconfig` as the admin with the given flags, once the
// Concierge has a working strategy, as an admin would: until then get kubeconfig rightly refuses
// unless told how to reach the Concierge.
func newCLIUser(ctx context.Context, t *testing.T, cfg *envconf.Config, flags ...string) cliUser {
	t.Helper()
	waitForStrategy(ctx, t, cfg, "")
	return cliUserFromFlags(ctx, t, cfg, flags...)
}

// cliUserFromFlags runs `pinniped get kubeconfig` as the admin with the given flags at once.
func cliUserFromFlags(ctx context.Context, t *testing.T, cfg *envconf.Config, flags ...string) cliUser {
	t.Helper()
	return cliUserWithEnv(ctx, t, cfg, nil, flags...)
}

// cliUserWithEnv is cliUserFromFlags for a user whose environment, from get kubeconfig on, has
// env added.
func cliUserWithEnv(ctx context.Context, t *testing.T, cfg *envconf.Config, env []string, flags ...string) cliUser {
	t.Helper()
	cli, err := steps.PinnipedCLI()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	u := cliUser{cli: cli, home: home, kubeconfig: filepath.Join(home, "kubeconfig"),
		credentialCache: filepath.Join(home, "credentials.yaml"), extraEnv: env, apiGroupSuffix: underTest(ctx).APIGroupSuffix}
	args := append([]string{"get", "kubeconfig", "--kubeconfig", cfg.KubeconfigFile(), "-o", u.kubeconfig,
		"--credential-cache", u.credentialCache, "--concierge-api-group-suffix", u.apiGroupSuffix}, flags...)
	if out, err := u.pinniped(ctx, args...); err != nil {
		t.Fatalf("pinniped get kubeconfig: %v\n%s", err, out)
	}
	return u
}

// newOIDCUser gets a kubeconfig for the Dex JWTAuthenticator whose login prints its URL instead of
// opening a browser, for the test to answer, once the Concierge has a working strategy (as
// newCLIUser); the user reaches Dex through its proxy, if any.
func newOIDCUser(ctx context.Context, t *testing.T, cfg *envconf.Config, idp *dex.Dex) cliUser {
	t.Helper()
	waitForStrategy(ctx, t, cfg, "")
	env, err := steps.ProxyClientEnv(ctx, idp.ProxyURL, cfg.KubeconfigFile())
	if err != nil {
		t.Fatal(err)
	}
	return cliUserWithEnv(ctx, t, cfg, env, "--concierge-authenticator-type", "jwt", "--concierge-authenticator-name", "dex",
		"--oidc-skip-browser", "--oidc-ca-bundle", idp.CABundlePath, "--oidc-session-cache", filepath.Join(t.TempDir(), "sessions.yaml"))
}

func (u cliUser) env() []string {
	return append(append(os.Environ(), "HOME="+u.home, "KUBECONFIG="+u.kubeconfig), u.extraEnv...)
}

// whoami runs pinniped whoami -o yaml as this user.
func (u cliUser) whoami(ctx context.Context) (string, error) {
	return u.pinniped(ctx, "whoami", "-o", "yaml", "--api-group-suffix", u.apiGroupSuffix)
}

// pinniped runs the CLI as this user and returns its combined output.
func (u cliUser) pinniped(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, u.cli, args...)
	cmd.Env = u.env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kubectl runs kubectl with the user's kubeconfig; an error carries its stderr.
func (u cliUser) kubectl(ctx context.Context, args ...string) (string, error) {
	out, stderr, err := u.kubectlOutput(ctx, args...)
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, stderr)
	}
	return out, nil
}

func (u cliUser) kubectlOutput(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	dir, err := steps.KubeBinDir()
	if err != nil {
		return "", "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "kubectl"), append([]string{"--kubeconfig", u.kubeconfig}, args...)...)
	cmd.Env = u.env()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// dexLogin is the browser's part of a login as user on Dex's own form.
func dexLogin(user dex.User) browser.Login {
	return browser.Login{Username: user.Email, Password: user.Password}
}

// kubectlWithBrowserLogin runs kubectl and completes the login in the browser when the plugin asks.
func (u cliUser) kubectlWithBrowserLogin(ctx context.Context, t *testing.T, b *browser.Browser, login browser.Login, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	dir, err := steps.KubeBinDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "kubectl"), append([]string{"--kubeconfig", u.kubeconfig}, args...)...)
	cmd.Env = u.env()
	return steps.RunWithBrowserLogin(ctx, cmd, b, login)
}

// cachedCertificates lists the client certificates in the user's credential cache file.
func (u cliUser) cachedCertificates(t *testing.T) []string {
	t.Helper()
	var f map[string]any
	u.readCache(t, &f)
	var certs []string
	for _, e := range f["credentials"].([]any) {
		cred := e.(map[string]any)["credential"].(map[string]any)
		certs = append(certs, fmt.Sprint(cred["clientCertificateData"]))
	}
	return certs
}

// expireCachedCredentials moves the expiry of every cached credential into the past, as five
// minutes of waiting would.
func (u cliUser) expireCachedCredentials(t *testing.T) {
	t.Helper()
	var f map[string]any
	u.readCache(t, &f)
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, e := range f["credentials"].([]any) {
		e.(map[string]any)["credential"].(map[string]any)["expirationTimestamp"] = past
	}
	raw, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(u.credentialCache, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// expireSessions moves the expiry of the access and ID tokens in the session cache into the
// past, as two minutes of waiting would, so that the next login refreshes the session.
func (u cliUser) expireSessions(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(u.sessionCache)
	if err != nil {
		t.Fatalf("the session cache: %v", err)
	}
	var f map[string]any
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("the session cache: %v", err)
	}
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, s := range f["sessions"].([]any) {
		tokens := s.(map[string]any)["tokens"].(map[string]any)
		for _, kind := range []string{"access", "id"} {
			if tok, ok := tokens[kind].(map[string]any); ok {
				tok["expiryTimestamp"] = past
			}
		}
	}
	if raw, err = yaml.Marshal(f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(u.sessionCache, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (u cliUser) readCache(t *testing.T, into any) {
	t.Helper()
	raw, err := os.ReadFile(u.credentialCache)
	if err != nil {
		t.Fatalf("the credential cache: %v", err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatalf("the credential cache: %v", err)
	}
}

// bindGroup grants a group the view ClusterRole for the rest of the test.
func bindGroup(ctx context.Context, t *testing.T, cfg *envconf.Config, name, group string) {
	t.Helper()
	kube := kubeClient(t, cfg)
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: group}},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
	})
}

// eventually retries f for half a minute: RBAC bindings reach the authorizer's cache a moment
// after they are created.
func eventually(ctx context.Context, t *testing.T, f func() error) {
	t.Helper()
	var last error
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(context.Context) (bool, error) {
		last = f()
		return last == nil, nil
	}); err != nil {
		t.Fatalf("still failing after 30s: %v", last)
	}
}
