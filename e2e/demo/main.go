// Command demo starts a local cluster with the Concierge, the local-user-authenticator and Dex,
// logs a demo user in through the pinniped CLI (a password with `login static`, then Dex in a
// headless browser with `login oidc`), shows kubectl working with the short-lived certificates, and
// hands over a kubeconfig to try: the project's main job on one machine (`make demo`). The cluster
// lives until the demo is interrupted, then it is deleted; `make demo-down` removes one left behind.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"sealion.dev/e2e/steps"
	"sealion.dev/fixtures/browser"
	"sealion.dev/fixtures/dex"
	"sealion.dev/providers"
	"sealion.dev/providers/all"
)

const clusterName = "sealion-demo"

func main() {
	all.Main() // first: a managed cluster's supervisor is this program, run again
	providerName := flag.String("provider", "kubeadm", "cluster provider: "+strings.Join(all.Names, ", "))
	down := flag.Bool("down", false, "delete the demo cluster instead")
	out := flag.String("out", steps.RepoPath("_output/demo"), "folder for the demo user's kubeconfig")
	flag.Parse()
	restore := takeTerminal()
	err := run(*providerName, *down, *out)
	restore()
	switch {
	case errors.Is(err, errStopped):
		fmt.Println("demo: stopped")
	case err != nil:
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

// errStopped is the user's Ctrl-C (or a SIGTERM): a request to stop, not a failure.
var errStopped = errors.New("stopped by a signal")

func run(providerName string, down bool, out string) (err error) {
	// Interrupting the demo deletes the cluster: its containerd and kubelet live in this process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer func() {
		if ctx.Err() != nil {
			err = errStopped
		}
	}()
	p, err := all.New(providerName, all.Options{Progress: os.Stderr})
	if err != nil {
		return err
	}
	if down {
		return p.Delete(ctx, clusterName)
	}

	staticPassword := randomPassword()
	hash, err := bcrypt.GenerateFromPassword([]byte(staticPassword), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	dexUser := dex.User{Email: "pinny@example.com", Username: "pinny", Password: randomPassword(), Groups: []string{"demo-viewers"}}
	var idp *dex.Dex
	defer func() {
		if idp != nil {
			_ = idp.Close()
		}
	}()
	cfg := envconf.New()
	setup := []env.Func{
		step("create a "+providerName+" cluster", steps.CreateCluster(p, clusterName, providers.CreateOptions{})),
		step("load the server image", steps.LoadImages(steps.ServerImageArchive())),
	}
	setup = append(setup, stepAll("install the local-user-authenticator", steps.InstallLocalUserAuthenticator())...)
	setup = append(setup, stepAll("install the Concierge", steps.InstallConcierge(steps.ReleaseDir()))...)
	setup = append(setup, step("wait until the Concierge reports a working strategy", func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		_, err := steps.WaitForStrategy(ctx, cfg, "", 3*time.Minute)
		return ctx, err
	}))
	setup = append(setup,
		step("group demo-viewers may view everything; local user pinny is in it", steps.ApplyManifest(userManifest(hash))),
		step("trust the local-user-authenticator with a WebhookAuthenticator", webhookAuthenticator),
		step("start Dex on this machine with user "+dexUser.Email+" and trust it with a JWTAuthenticator",
			func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
				if idp, err = steps.StartDexForCluster(ctx, []dex.User{dexUser}); err != nil {
					return ctx, err
				}
				return ctx, steps.TrustDex(ctx, cfg, "dex", idp)
			}),
	)
	defer func() {
		fmt.Println("\n==> deleting the demo cluster")
		if err := p.Delete(context.WithoutCancel(ctx), clusterName); err != nil {
			fmt.Fprintf(os.Stderr, "demo: deleting the cluster: %v (make demo-down retries)\n", err)
		}
	}()
	for _, f := range setup {
		if ctx, err = f(ctx, cfg); err != nil {
			return err
		}
	}
	cli, err := steps.PinnipedCLI()
	if err != nil {
		return err
	}
	check, err := os.MkdirTemp("", "sealion-demo-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(check)

	fmt.Println("\n==> pinny logs in with a password through `pinniped login static`")
	static, err := getKubeconfig(ctx, cli, cfg.KubeconfigFile(), filepath.Join(check, "static"),
		"--concierge-authenticator-type", "webhook", "--concierge-authenticator-name", "local-users", "--static-token", "pinny:"+staticPassword)
	if err != nil {
		return err
	}
	if err := showKubectl(ctx, static, nil, dexUser, "auth", "whoami"); err != nil {
		return err
	}

	fmt.Println("\n==> pinny logs in through Dex in a headless browser with `pinniped login oidc`")
	b, err := browser.Start(ctx, browser.Options{TrustedCABundle: idp.CABundle})
	if err != nil {
		return err
	}
	defer b.Close()
	oidc, err := getKubeconfig(ctx, cli, cfg.KubeconfigFile(), filepath.Join(check, "oidc"),
		"--concierge-authenticator-type", "jwt", "--concierge-authenticator-name", "dex", "--oidc-skip-browser")
	if err != nil {
		return err
	}
	login := b
	for _, args := range [][]string{{"auth", "whoami"}, {"get", "pods", "-n", "pinniped-concierge"}, {"get", "secrets", "-n", "kube-system"}} {
		if err := showKubectl(ctx, oidc, login, dexUser, args...); err != nil {
			fmt.Println(err) // the last one is refused by RBAC, as it should be
		}
		login = nil // the first call logged in; the others run from the caches
	}

	kubeconfig, err := getKubeconfig(ctx, cli, cfg.KubeconfigFile(), out,
		"--concierge-authenticator-type", "jwt", "--concierge-authenticator-name", "dex")
	if err != nil {
		return err
	}
	fmt.Printf(`
The Concierge picked its strategy (kubectl get credentialissuer -o yaml shows it) and exchanged
pinny's Dex ID token for a 5-minute certificate. Your turn, with a kubeconfig that holds no secret:

  %s --kubeconfig %s get pods -A

Log in to Dex as %s with password %s (the CLI opens a browser, or prints the
link to open and lets you paste the code). Press Ctrl-C to delete the cluster and stop Dex.
`, kubectlPath(), kubeconfig, dexUser.Email, dexUser.Password)
	<-ctx.Done()
	return nil
}

// getKubeconfig runs `pinniped get kubeconfig` as the admin and writes the result, with caches of
// its own, into dir.
func getKubeconfig(ctx context.Context, cli, admin, dir string, flags ...string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	args := append([]string{"get", "kubeconfig", "--kubeconfig", admin, "-o", path,
		"--credential-cache", filepath.Join(dir, "credentials.yaml")}, flags...)
	if slices.Contains(flags, "jwt") {
		args = append(args, "--oidc-session-cache", filepath.Join(dir, "sessions.yaml"))
	}
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("pinniped get kubeconfig: %w\n%s", err, out)
	}
	return path, nil
}

// showKubectl runs kubectl as the demo user and prints the command and its output; with a browser,
// it answers the login the command starts.
func showKubectl(ctx context.Context, kubeconfig string, b *browser.Browser, user dex.User, args ...string) error {
	fmt.Printf("\n$ kubectl --kubeconfig %s %s\n", kubeconfig, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, kubectlPath(), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var out []byte
	var err error
	if b != nil {
		var o string
		o, err = steps.RunWithBrowserLogin(ctx, cmd, b, browser.Login{Username: user.Email, Password: user.Password})
		out = []byte(o)
	} else {
		out, err = cmd.CombinedOutput()
	}
	fmt.Print(string(out))
	return err
}

func step(what string, f env.Func) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		fmt.Printf("==> %s\n", what)
		return f(ctx, cfg)
	}
}

func stepAll(what string, fs []env.Func) []env.Func {
	out := []env.Func{step(what, func(ctx context.Context, _ *envconf.Config) (context.Context, error) { return ctx, nil })}
	return append(out, fs...)
}

func userManifest(hash []byte) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: pinny, namespace: local-user-authenticator}
stringData: {groups: demo-viewers}
data: {passwordHash: %s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: demo-viewers-view}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: demo-viewers}]
`, base64.StdEncoding.EncodeToString(hash))
}

// webhookAuthenticator points the Concierge at the local-user-authenticator, trusting the CA it published.
func webhookAuthenticator(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	ca, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "get", "secret", "-n", "local-user-authenticator", "api-serving-cert", "-o", "jsonpath={.data.caCertificate}")
	if err != nil {
		return ctx, err
	}
	if _, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), fmt.Sprintf(`apiVersion: authentication.concierge.pinniped.dev/v1alpha1
kind: WebhookAuthenticator
metadata: {name: local-users}
spec:
  endpoint: https://local-user-authenticator.local-user-authenticator.svc/authenticate
  tls: {certificateAuthorityData: %s}
`, ca), "apply", "-f", "-"); err != nil {
		return ctx, err
	}
	return steps.WaitFor(2*time.Minute, "jsonpath={.status.phase}=Ready", "webhookauthenticator/local-users")(ctx, cfg)
}

func kubectlPath() string {
	if dir, err := steps.KubeBinDir(); err == nil {
		return filepath.Join(dir, "kubectl")
	}
	return "kubectl"
}

func randomPassword() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
