// Command demo starts a local cluster with the Concierge, the local-user-authenticator and Dex,
// logs a demo user in through the pinniped CLI (a password with `login static`, then Dex in a
// headless browser with `login oidc`), shows kubectl working with the short-lived certificates,
// draws the Concierge's Grafana dashboard over those logins from scrapes of its /metrics (with
// --dashboard-renderer), and hands over a kubeconfig to try: the project's main job on one machine
// (`make demo`). The cluster
// lives until the demo is interrupted, then it is deleted; `make demo-down` removes one left behind.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
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
	logPath := flag.String("log", "", "file for the progress of the cluster provider and the e2e steps (default: standard error)")
	renderer := flag.String("dashboard-renderer", "", "tools/dashboardrender built: the Concierge's dashboard over the logins is drawn into --out (make demo builds it)")
	flag.Parse()
	terminal := os.Stderr
	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			fmt.Fprintf(terminal, "demo: %v\n", err)
			os.Exit(1)
		}
		defer f.Close()
		// The provider and the e2e steps report their progress on standard error; the demo
		// shows one line per step of its own instead, and its errors still reach the terminal.
		os.Stderr = f
	}
	restore := takeTerminal()
	err := run(*providerName, *down, *out, *renderer)
	restore()
	switch {
	case errors.Is(err, errStopped):
		fmt.Println("demo: stopped")
	case err != nil:
		fmt.Fprintf(terminal, "demo: %v (more in %s)\n", err, cmp.Or(*logPath, "the output above"))
		os.Exit(1)
	}
}

// errStopped is the user's Ctrl-C (or a SIGTERM): a request to stop, not a failure.
var errStopped = errors.New("stopped by a signal")

func run(providerName string, down bool, out, renderer string) (err error) {
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
	setup = append(setup, step("install the local-user-authenticator", steps.InstallLocalUserAuthenticator()...))
	setup = append(setup, step("install the Concierge", steps.InstallConcierge(steps.ReleaseDir())...))
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
	defer deleteCluster(ctx, os.Stdout, p, clusterParts(p.Info()))
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

	var rec *recording
	if renderer != "" {
		record := step("scrape the Concierge's metrics every "+scrapeInterval.String()+" as Prometheus would", func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
			rec, err = startRecording(ctx, cfg, filepath.Join(out, "metrics"))
			return ctx, err
		})
		if ctx, err = record(ctx, cfg); err != nil {
			return err
		}
	}

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
	if err := showBrowserLogin(ctx, cli, cfg.KubeconfigFile(), filepath.Join(check, "oidc"), idp.CABundle, dexUser); err != nil {
		return err
	}

	if rec != nil {
		if err := showDashboard(ctx, renderer, rec, filepath.Join(out, "concierge-dashboard.png")); err != nil {
			return err
		}
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

// showBrowserLogin logs the user in through Dex in a headless browser, then shows kubectl calls
// from the caches. The browser only serves this proof: it is closed before the demo waits.
func showBrowserLogin(ctx context.Context, cli, admin, dir string, caBundle []byte, user dex.User) error {
	b, err := browser.Start(ctx, browser.Options{TrustedCABundle: caBundle})
	if err != nil {
		return err
	}
	defer b.Close()
	kubeconfig, err := getKubeconfig(ctx, cli, admin, dir,
		"--concierge-authenticator-type", "jwt", "--concierge-authenticator-name", "dex", "--oidc-skip-browser")
	if err != nil {
		return err
	}
	login := b
	for _, args := range [][]string{{"auth", "whoami"}, {"get", "pods", "-n", "pinniped-concierge"}, {"get", "secrets", "-n", "kube-system"}} {
		if err := showKubectl(ctx, kubeconfig, login, user, args...); err != nil {
			fmt.Println(err) // the last one is refused by RBAC, as it should be
		}
		login = nil // the first call logged in; the others run from the caches
	}
	return nil
}

// deleteCluster deletes the demo's cluster, even after the Ctrl-C that ended the demo. A cluster
// of this machine runs its containerd and kubelet as this process's children, so the deletion must
// not be cut short by a second Ctrl-C: that one is answered with what is still being deleted
// (parts).
func deleteCluster(ctx context.Context, out io.Writer, p interface {
	Delete(context.Context, string) error
}, parts string) {
	fmt.Fprintf(out, "\n==> deleting the demo cluster %s ... ", clusterName)
	start := time.Now()
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	done := make(chan error, 1)
	go func() { done <- p.Delete(context.WithoutCancel(ctx), clusterName) }()
	for {
		select {
		case <-again:
			fmt.Fprintf(out, "\n    still deleting %s: %s; the demo ends once they are gone (Ctrl-\\ ends it now, and make demo-down deletes what is left) ... ", clusterName, parts)
		case err := <-done:
			if err != nil {
				fmt.Fprintf(out, "failed: %v (make demo-down retries)\n", err)
				return
			}
			fmt.Fprintln(out, took(start))
			return
		}
	}
}

// clusterParts names what deleting a cluster of the provider removes, for the user who waits.
func clusterParts(info providers.Info) string {
	switch {
	case info.Name == "kind":
		return "its node containers in Docker and their network"
	case info.ChangesHost:
		return "its pods, containerd and kubelet, /etc/kubernetes, /var/lib/kubelet, and its CNI and iptables rules on this machine"
	default:
		return "what the demo created in the cluster"
	}
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

// step shows f as one line of progress: what it does and, once it is over, its time.
func step(what string, fs ...env.Func) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		fmt.Printf("==> %s ... ", what)
		start := time.Now()
		for _, f := range fs {
			var err error
			if ctx, err = f(ctx, cfg); err != nil {
				fmt.Printf("failed after %s\n", took(start))
				return ctx, err
			}
		}
		fmt.Println(took(start))
		return ctx, nil
	}
}

// took is the time since start as the make demo's steps show theirs (tools/phase).
func took(start time.Time) string {
	d := time.Since(start).Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
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
