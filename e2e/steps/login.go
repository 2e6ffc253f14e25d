package steps

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"sealion.dev/fixtures/browser"
	"sealion.dev/fixtures/dex"
	"sealion.dev/fixtures/dex/incluster"
	"sealion.dev/providers"
)

// DexImage is the Dex fixture's image (tools/images dex), run in clusters whose pods cannot reach
// this machine; the installs push or load it with the server image.
const DexImage = "localhost/sealion/dex-fixture:dev"

// FixturesInClusterEnv set to "true" runs the fixtures in the cluster on clusters of this machine
// too.
const FixturesInClusterEnv = "SEALION_FIXTURES_IN_CLUSTER"

// FixturesInCluster says whether the fixtures the cluster's pods must reach run in the cluster
// (StartDexForCluster, StartLDAPForCluster), and so whether this machine reaches the Supervisor
// through the run's tunnel proxy: where the cluster is not on this machine, whose address its pods
// are then not sure to reach, or where $SEALION_FIXTURES_IN_CLUSTER asks for it.
func FixturesInCluster(info providers.Info) bool {
	return !info.ChangesHost || os.Getenv(FixturesInClusterEnv) == "true"
}

// StartDexForCluster runs the Dex fixture where both the cluster's pods (the Concierge fetches its
// keys) and local clients (the CLI, the browser) reach it: on this machine's address for a cluster
// of this machine, else in the cluster (fixtures/dex/incluster), tunnelled by the run's proxy for
// local clients (Cluster.Tunnel, the returned Dex's ProxyURL). Users and clients default as
// dex.Start's.
func StartDexForCluster(ctx context.Context, users []dex.User, clients ...dex.Client) (*dex.Dex, error) {
	if c := ClusterFrom(ctx); c != nil && FixturesInCluster(c.Info) {
		proxy, err := c.Tunnel()
		if err != nil {
			return nil, err
		}
		return incluster.Start(ctx, incluster.Options{Kubeconfig: c.Kubeconfig, Image: Image(ctx, DexImage), Users: users, Clients: clients, Tunnel: proxy})
	}
	hostIP, err := providers.HostIPv4()
	if err != nil {
		return nil, err
	}
	return dex.Start(ctx, dex.Options{ListenAddress: "0.0.0.0:0", IssuerHost: hostIP, Users: users, Clients: clients})
}

// ProxyClientEnv is the environment in which a user's kubectl and pinniped CLI (`get kubeconfig`
// included, which reads the issuer's discovery document) reach servers in the cluster through
// the run's tunnel proxy at proxyURL (Cluster.Tunnel; Dex's ProxyURL): HTTPS_PROXY for them, and
// NO_PROXY naming every host they send anything else to, which stay direct: the servers of the
// admin kubeconfig at path and the impersonation proxy endpoints the CredentialIssuers advertise
// (the kubeconfigs `get kubeconfig` writes name nothing else). Nil where proxyURL is empty (no
// server is in the cluster).
func ProxyClientEnv(ctx context.Context, proxyURL, path string) ([]string, error) {
	if proxyURL == "" {
		return nil, nil
	}
	out, err := Kubectl(ctx, path, "", "get", "credentialissuers", "-o",
		`jsonpath={range .items[*].status.strategies[*]}{.frontend.impersonationProxyInfo.endpoint}{"\n"}{end}`)
	if err != nil {
		return nil, err
	}
	return proxyClientEnv(proxyURL, path, strings.Fields(out))
}

// proxyClientEnv is ProxyClientEnv's environment for the admin kubeconfig at path and the
// impersonation proxy endpoints ("host", "host:port" or a URL).
func proxyClientEnv(proxyURL, path string, endpoints []string) ([]string, error) {
	config, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the admin kubeconfig: %w", err)
	}
	var direct []string
	add := func(endpoint string) error {
		if !strings.Contains(endpoint, "://") {
			endpoint = "https://" + endpoint
		}
		u, err := url.Parse(endpoint)
		if err != nil || u.Hostname() == "" {
			return fmt.Errorf("endpoint %q has no host", endpoint)
		}
		if !slices.Contains(direct, u.Hostname()) {
			direct = append(direct, u.Hostname())
		}
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(config.Clusters)) {
		if err := add(config.Clusters[name].Server); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
		}
	}
	for _, e := range endpoints {
		if err := add(e); err != nil {
			return nil, fmt.Errorf("CredentialIssuer: %w", err)
		}
	}
	return []string{"HTTPS_PROXY=" + proxyURL, "NO_PROXY=" + strings.Join(direct, ",")}, nil
}

// TrustDex creates a JWTAuthenticator for Dex's ID tokens to the pinniped-cli client (username
// from the email claim, groups from the groups claim) and waits until the Concierge loaded it,
// which means its pods fetched Dex's discovery document and keys.
func TrustDex(ctx context.Context, cfg *envconf.Config, name string, idp *dex.Dex) error {
	_, err := Kubectl(ctx, cfg.KubeconfigFile(), fmt.Sprintf(`apiVersion: authentication.concierge.pinniped.dev/v1alpha1
kind: JWTAuthenticator
metadata: {name: %s}
spec:
  issuer: %s
  audience: %s
  claims: {username: email, groups: groups}
  tls: {certificateAuthorityData: %s}
`, name, idp.IssuerURL, dex.PublicClientID, base64.StdEncoding.EncodeToString(idp.CABundle)), "apply", "-f", "-")
	if err != nil {
		return err
	}
	_, err = WaitFor(2*time.Minute, "jsonpath={.status.phase}=Ready", "jwtauthenticator/"+name)(ctx, cfg)
	return err
}

// RunWithBrowserLogin runs cmd, a kubectl (or pinniped) whose kubeconfig logs in with
// `pinniped login oidc --skip-browser`: it waits for the authorization URL the plugin prints on
// stderr, logs in through the login page in b as login says (the browser then redirects to the
// plugin's localhost listener), and returns the command's stdout and stderr once it ends. With
// `--flow=device` the plugin prints the link to the Supervisor's verification page instead: the
// browser approves there first, and the plugin's poll gets the tokens.
// login's AuthorizeURL and RedirectPrefix come from the plugin.
func RunWithBrowserLogin(ctx context.Context, cmd *exec.Cmd, b *browser.Browser, login browser.Login) (string, error) {
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	// The plugin is kubectl's child and holds stderr open: a failed or timed-out login ends the
	// whole process group, or reading stderr would wait for the plugin forever.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	killGroup := func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Cancel = killGroup
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	authURL, rest := loginURL(stderr)
	var stderrText bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&stderrText, rest); close(copied) }()
	stop := func(err error) (string, error) {
		_ = killGroup()
		_ = cmd.Wait()
		<-copied
		return stdout.String() + stderrText.String(), err
	}
	if authURL == "" {
		return stop(fmt.Errorf("%s printed no login URL", cmd.Args[0]))
	}
	redirect, err := url.Parse(authURL)
	if err != nil {
		return stop(err)
	}
	login.AuthorizeURL, login.RedirectPrefix = authURL, redirect.Query().Get("redirect_uri")
	if device := redirect.Query().Has("user_code"); device {
		// The device flow's link to the verification page: approve there, then log in; the
		// login ends at the page's own callback, and the plugin, polling, gets the tokens.
		redirect.RawQuery = ""
		login.RedirectPrefix = redirect.String() + "/callback"
		login.Clicks = append(slices.Clone(browser.SupervisorDeviceApproval), login.Clicks...)
	}
	if login.Restarted == nil {
		login.Restarted = func(page string) {
			fmt.Fprintf(os.Stderr, "e2e: Chromium dropped %s on a network change (pods coming and going on this machine): the login as %q starts again\n", page, login.Username)
		}
	}
	loginCtx, cancelLogin := context.WithCancel(ctx)
	defer cancelLogin()
	loggedIn := make(chan error, 1)
	go func() { _, err := b.Login(loginCtx, login); loggedIn <- err }()
	select {
	case err := <-loggedIn:
		if err != nil {
			SaveLoginScreenshot(err, login.Username)
			return stop(fmt.Errorf("browser login as %q: %w%s", login.Username, err, tunnelStory(ctx)))
		}
	case <-copied:
		// The command ended, so the browser's part is over, whether or not the browser reported
		// the request that handed the code over (a fetch of the page's script may end unseen).
		// When it ended because time ran out, the browser's story is the failure's cause.
		cancelLogin()
		if err := <-loggedIn; err != nil && ctx.Err() != nil {
			SaveLoginScreenshot(err, login.Username)
			out, _ := stop(nil)
			return out, fmt.Errorf("%w; the browser login as %q: %w%s", ctx.Err(), login.Username, err, tunnelStory(ctx))
		}
	}
	<-copied // all of stderr, before Wait closes the pipe
	err = cmd.Wait()
	return stdout.String() + stderrText.String(), err
}

// RunWithLoginLink runs cmd as RunWithBrowserLogin does, but hands the login URL (or the device
// flow's verification link) the plugin prints to act instead of a browser login, and returns the
// command's stdout and stderr once it ends, whatever its exit status (cmd.ProcessState has it):
// for logins that must fail, such as a device request denied on the verification page. The error
// is act's, which ends the command, or says that no link came.
func RunWithLoginLink(ctx context.Context, cmd *exec.Cmd, act func(ctx context.Context, link string) error) (string, error) {
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	killGroup := func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Cancel = killGroup
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	link, rest := loginURL(stderr)
	var stderrText bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&stderrText, rest); close(copied) }()
	if link == "" {
		err = fmt.Errorf("%s printed no login URL", cmd.Args[0])
	} else {
		err = act(ctx, link)
	}
	if err != nil {
		_ = killGroup()
	}
	<-copied // all of stderr, before Wait closes the pipe
	_ = cmd.Wait()
	return stdout.String() + stderrText.String(), err
}

// loginURL reads stderr up to the first line holding an authorization URL, or the device flow's
// link to the verification page with the code filled in, and returns it, with a reader of all of
// stderr, that line included.
func loginURL(stderr io.Reader) (string, io.Reader) {
	r := bufio.NewReader(stderr)
	var seen strings.Builder
	for {
		line, err := r.ReadString('\n')
		if s := strings.TrimSpace(line); strings.HasPrefix(s, "https://") && (strings.Contains(s, "code_challenge=") || strings.Contains(s, "?user_code=")) {
			return s, io.MultiReader(strings.NewReader(seen.String()+line), r)
		}
		seen.WriteString(line)
		if err != nil {
			return "", strings.NewReader(seen.String())
		}
	}
}

// tunnelStory tells of the run's last tunnels (fixtures/tunnel), if the run has its proxy: a
// login that failed through it may have waited on one.
func tunnelStory(ctx context.Context) string {
	c := ClusterFrom(ctx)
	if c == nil {
		return ""
	}
	c.mu.Lock()
	p := c.tunnel
	c.mu.Unlock()
	if p == nil {
		return ""
	}
	return "\nthe run's tunnels, last ones:\n  " + strings.Join(p.Recent(), "\n  ")
}
