package steps

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"sealion.dev/fixtures/browser"
	"sealion.dev/fixtures/dex"
	"sealion.dev/providers"
)

// StartDexForCluster runs the Dex fixture on this machine's address, which both the cluster's pods
// (the Concierge fetches its keys) and local clients (the CLI, the browser) reach.
func StartDexForCluster(ctx context.Context, users ...dex.User) (*dex.Dex, error) {
	hostIP, err := providers.HostIPv4()
	if err != nil {
		return nil, err
	}
	return dex.Start(ctx, dex.Options{ListenAddress: "0.0.0.0:0", IssuerHost: hostIP, Users: users})
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
// plugin's localhost listener), and returns the command's stdout and stderr once it ends.
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
	loginCtx, cancelLogin := context.WithCancel(ctx)
	defer cancelLogin()
	loggedIn := make(chan error, 1)
	go func() { _, err := b.Login(loginCtx, login); loggedIn <- err }()
	select {
	case err := <-loggedIn:
		if err != nil {
			SaveLoginScreenshot(err, login.Username)
			return stop(fmt.Errorf("browser login as %q: %w", login.Username, err))
		}
	case <-copied:
		// The command ended, so the browser's part is over, whether or not the browser reported
		// the request that handed the code over (a fetch of the page's script may end unseen).
		cancelLogin()
		<-loggedIn
	}
	<-copied // all of stderr, before Wait closes the pipe
	err = cmd.Wait()
	return stdout.String() + stderrText.String(), err
}

// loginURL reads stderr up to the first line holding an authorization URL and returns it, with a
// reader of everything else.
func loginURL(stderr io.Reader) (string, io.Reader) {
	r := bufio.NewReader(stderr)
	var seen strings.Builder
	for {
		line, err := r.ReadString('\n')
		if s := strings.TrimSpace(line); strings.HasPrefix(s, "https://") && strings.Contains(s, "code_challenge=") {
			return s, io.MultiReader(strings.NewReader(seen.String()), r)
		}
		seen.WriteString(line)
		if err != nil {
			return "", strings.NewReader(seen.String())
		}
	}
}
