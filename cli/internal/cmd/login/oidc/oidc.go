// Package oidc implements "pinniped login oidc", the kubectl credential plugin for OpenID Connect
// issuers (a Pinniped Supervisor or any other): it logs the user in with oidclogin, using and
// updating the session cache, and prints the ID token as an ExecCredential, or, with
// --enable-concierge, exchanges it at the Concierge for a short-lived client certificate and prints
// that. The result is kept in the credential cache.
package oidc

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	clientauthv1beta1 "k8s.io/client-go/pkg/apis/clientauthentication/v1beta1"

	"sealion.dev/cli/internal/cafiles"
	"sealion.dev/cli/internal/clientconfig"
	"sealion.dev/cli/internal/credentialplugin"
	"sealion.dev/cli/internal/deps"
	"sealion.dev/cli/internal/execcredential"
	"sealion.dev/cli/pkg/credentialcache"
	"sealion.dev/cli/pkg/oidclogin"
	"sealion.dev/cli/pkg/sessioncache"
)

// Environment variables the command reads.
const (
	debugEnv    = "PINNIPED_DEBUG"
	flowEnv     = "PINNIPED_UPSTREAM_IDENTITY_PROVIDER_FLOW"
	skipURLEnv  = "PINNIPED_SKIP_PRINT_LOGIN_URL"
	usernameEnv = "PINNIPED_USERNAME"
	passwordEnv = "PINNIPED_PASSWORD" //nolint:gosec // the variable's name, not a credential
)

// DefaultClientID is the Supervisor's public client for the CLI.
const DefaultClientID = "pinniped-cli"

// DefaultScopes are what a Supervisor offers the CLI.
var DefaultScopes = []string{"offline_access", "openid", "pinniped:request-audience", "username", "groups"}

const defaultSessionCache = "~/.config/pinniped/sessions.yaml"

type flags struct {
	issuer            string
	clientID          string
	listenPort        uint16
	scopes            []string
	skipBrowser       bool
	skipListen        bool
	sessionCache      string
	debugSessionCache bool
	caBundlePaths     []string
	caBundleData      []string
	requestAudience   string
	upstreamIDPName   string
	upstreamIDPType   string
	upstreamIDPFlow   string
	loginFlow         string
	concierge         credentialplugin.ConciergeFlags
	credentialCache   string
}

// NewCommand returns the "oidc" subcommand of "login".
func NewCommand(d deps.Deps) *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:          "oidc --issuer ISSUER",
		Short:        "Login using an OpenID Connect provider",
		Long:         "Login using an OpenID Connect provider. Meant to be run by kubectl as a credential plugin (from a kubeconfig made by \"pinniped get kubeconfig\"), not by hand.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.defaults(cmd)
			return run(cmd.Context(), d, &f)
		},
	}
	f.add(cmd)
	_ = cmd.MarkFlagRequired("issuer")
	return cmd
}

// defaults fills in what depends on whether a flag was given.
func (f *flags) defaults(cmd *cobra.Command) {
	if !cmd.Flags().Changed("session-cache") {
		f.sessionCache = ""
	}
}

// add defines the command's flags on cmd, storing their values in f.
func (f *flags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.issuer, "issuer", "", "OpenID Connect issuer URL")
	fs.StringVar(&f.clientID, "client-id", DefaultClientID, "OpenID Connect client ID")
	fs.Uint16Var(&f.listenPort, "listen-port", 0, "TCP port for localhost listener (authorization code flow only; default: a free port)")
	fs.StringSliceVar(&f.scopes, "scopes", DefaultScopes, "OIDC scopes to request during login")
	fs.BoolVar(&f.skipBrowser, "skip-browser", false, "Skip opening the browser (just print the URL)")
	fs.BoolVar(&f.skipListen, "skip-listen", false, "Skip starting a localhost callback listener (manual copy/paste flow only)")
	fs.StringVar(&f.sessionCache, "session-cache", defaultSessionCache, "Path to session cache file ($XDG_CONFIG_HOME/pinniped/sessions.yaml by default when $XDG_CONFIG_HOME is set)")
	fs.BoolVar(&f.debugSessionCache, "debug-session-cache", false, "Print debug logs related to the session cache")
	fs.StringSliceVar(&f.caBundlePaths, "ca-bundle", nil, "Path to TLS certificate authority bundle (PEM format, optional, can be repeated)")
	fs.StringSliceVar(&f.caBundleData, "ca-bundle-data", nil, "Base64 encoded TLS certificate authority bundle (base64 encoded PEM format, optional, can be repeated)")
	fs.StringVar(&f.requestAudience, "request-audience", "", "Request a token with an alternate audience using RFC8693 token exchange")
	fs.StringVar(&f.upstreamIDPName, "upstream-identity-provider-name", "", "The name of the upstream identity provider used during login with a Supervisor")
	fs.StringVar(&f.upstreamIDPType, "upstream-identity-provider-type", "oidc", "The type of the upstream identity provider used during login with a Supervisor (e.g. 'oidc', 'ldap', 'activedirectory', 'github')")
	fs.StringVar(&f.upstreamIDPFlow, "upstream-identity-provider-flow", "", "The type of client flow to use with the upstream identity provider during login with a Supervisor (e.g. 'browser_authcode', 'cli_password')")
	fs.StringVar(&f.loginFlow, "flow", "", "How to log in at the issuer when the upstream identity provider's login is in a browser: 'browser' (a browser on this machine, or a pasted code) or 'device' (approve in a browser on any device, with a code; RFC 8628) (default: browser, or device when this machine can neither open a browser nor prompt on a terminal and --skip-browser is not given)")
	f.concierge.AddFlags(cmd)
	fs.StringVar(&f.credentialCache, "credential-cache", credentialplugin.DefaultCredentialCache, "Path to cluster-specific credentials cache (\"\" disables the cache)")
	_ = fs.MarkHidden("skip-listen")
	_ = fs.MarkHidden("debug-session-cache")
}

// ArgsOf returns the arguments of "pinniped login oidc" after "login oidc" when the kubeconfig's
// selected user logs in with it, as pinniped get kubeconfig writes.
func ArgsOf(loaded *clientconfig.Loaded) ([]string, bool) {
	user := loaded.Raw.AuthInfos[loaded.Context.AuthInfo]
	if user == nil || user.Exec == nil || len(user.Exec.Args) < 2 || user.Exec.Args[0] != "login" || user.Exec.Args[1] != "oidc" {
		return nil, false
	}
	return user.Exec.Args[2:], true
}

// parseArgs reads the flags of "pinniped login oidc" in args (ArgsOf's). Flags this version does
// not know are ignored.
func parseArgs(args []string) (*flags, error) {
	var f flags
	cmd := &cobra.Command{FParseErrWhitelist: cobra.FParseErrWhitelist{UnknownFlags: true}}
	f.add(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		return nil, err
	}
	f.defaults(cmd)
	return &f, nil
}

// sessionConfig is what names the session of f's logins in the cache (oidclogin.SessionKeyOf).
func (f *flags) sessionConfig() oidclogin.Config {
	return oidclogin.Config{Issuer: f.issuer, ClientID: f.clientID, Scopes: f.scopes, ListenPort: f.listenPort, UpstreamIdentityProviderName: f.upstreamIDPName}
}

// Session finds the cached session of "pinniped login oidc" run with args (ArgsOf's), for pinniped
// whoami to show when it ends: its issuer, and its tokens or nil when the cache has none.
func Session(d deps.Deps, args []string) (string, *oidclogin.Token, error) {
	f, err := parseArgs(args)
	if err != nil {
		return "", nil, err
	}
	cache, err := f.openSessionCache(d)
	if err != nil {
		return "", nil, err
	}
	return f.issuer, cache.GetToken(oidclogin.SessionKeyOf(f.sessionConfig())), nil
}

// Logout ends the session of "pinniped login oidc" run with args (ArgsOf's), for pinniped logout:
// the issuer revokes it and it leaves the session cache (oidclogin.Logout), and the credential
// cache is emptied, so that no cluster credential made from it is used again. It returns the
// issuer and whether the cache held a session.
func Logout(ctx context.Context, d deps.Deps, args []string) (string, bool, error) {
	f, err := parseArgs(args)
	if err != nil {
		return "", false, err
	}
	caBundle, err := f.readCABundle()
	if err != nil {
		return f.issuer, false, err
	}
	client, err := oidclogin.NewHTTPClient(caBundle)
	if err != nil {
		return f.issuer, false, fmt.Errorf("--ca-bundle/--ca-bundle-data: %w", err)
	}
	sessions, err := f.openSessionCache(d)
	if err != nil {
		return f.issuer, false, err
	}
	cfg := f.sessionConfig()
	cfg.HTTPClient, cfg.SessionCache, cfg.Out, cfg.Now = client, sessions, d.ErrOut, d.Now
	if d.Getenv(debugEnv) == "true" {
		cfg.Logf = func(format string, args ...any) { fmt.Fprintf(d.ErrOut, "pinniped: "+format+"\n", args...) }
	}
	found, logoutErr := oidclogin.Logout(ctx, cfg)
	if f.credentialCache != "" {
		path, err := credentialplugin.ExpandHome(f.credentialCache, d.HomeDir)
		if err != nil {
			return f.issuer, found, errors.Join(logoutErr, err)
		}
		if err := credentialcache.New(path).Clear(); err != nil {
			return f.issuer, found, errors.Join(logoutErr, fmt.Errorf("emptying the credential cache: %w", err))
		}
	}
	return f.issuer, found, logoutErr
}

func run(ctx context.Context, d deps.Deps, f *flags) error {
	info, err := execcredential.ReadInfo(d.Getenv)
	if err != nil {
		return err
	}
	// Flag mistakes surface before the user goes through a login.
	concierge, err := f.concierge.Config(info)
	if err != nil {
		return err
	}
	flow := f.upstreamIDPFlow
	if env := d.Getenv(flowEnv); env != "" {
		flow = env
	}
	switch flow {
	case "", oidclogin.FlowBrowserAuthcode, oidclogin.FlowCLIPassword:
	default:
		return fmt.Errorf("invalid --upstream-identity-provider-flow (or $%s) %q: must be %s or %s", flowEnv, flow, oidclogin.FlowBrowserAuthcode, oidclogin.FlowCLIPassword)
	}
	switch f.loginFlow {
	case "", oidclogin.LoginFlowBrowser, oidclogin.LoginFlowDevice:
	default:
		return fmt.Errorf("invalid --flow %q: must be %s or %s", f.loginFlow, oidclogin.LoginFlowBrowser, oidclogin.LoginFlowDevice)
	}
	caBundle, err := f.readCABundle()
	if err != nil {
		return err
	}
	client, err := oidclogin.NewHTTPClient(caBundle)
	if err != nil {
		return fmt.Errorf("--ca-bundle/--ca-bundle-data: %w", err)
	}
	credCache, err := credentialplugin.OpenCredentialCache(d, f.credentialCache, info)
	if err != nil {
		return err
	}
	if cached := credCache.Get(); cached != nil {
		return execcredential.Write(d.Out, info.APIVersion, cached)
	}
	sessions, err := f.openSessionCache(d)
	if err != nil {
		return err
	}

	cfg := oidclogin.Config{
		Issuer:                       f.issuer,
		ClientID:                     f.clientID,
		Scopes:                       f.scopes,
		HTTPClient:                   client,
		UpstreamIdentityProviderName: f.upstreamIDPName,
		UpstreamIdentityProviderType: f.upstreamIDPType,
		Flow:                         flow,
		LoginFlow:                    f.loginFlow,
		RequestAudience:              f.requestAudience,
		ListenPort:                   f.listenPort,
		SkipListen:                   f.skipListen,
		SkipBrowser:                  f.skipBrowser,
		SkipPrintLoginURL:            d.Getenv(skipURLEnv) == "true",
		OpenURL:                      d.OpenURL,
		Prompter:                     d.Prompter,
		Username:                     d.Getenv(usernameEnv),
		Password:                     d.Getenv(passwordEnv),
		SessionCache:                 sessions,
		Out:                          d.ErrOut,
		Now:                          d.Now,
	}
	if d.Getenv(debugEnv) == "true" {
		cfg.Logf = func(format string, args ...any) { fmt.Fprintf(d.ErrOut, "pinniped: "+format+"\n", args...) }
	}
	tok, err := oidclogin.Login(ctx, cfg)
	if err != nil {
		return explain(err)
	}
	if tok.IDToken == nil {
		return errors.New("could not complete the OIDC login: no ID token was issued")
	}

	status := &clientauthv1beta1.ExecCredentialStatus{Token: tok.IDToken.Token, ExpirationTimestamp: credentialplugin.Expiry(tok.IDToken.Expiry)}
	if concierge != nil {
		if status, err = credentialplugin.Exchange(ctx, d, *concierge, tok.IDToken.Token); err != nil {
			return err
		}
	}
	credCache.Put(status)
	return execcredential.Write(d.Out, info.APIVersion, status)
}

// readCABundle joins the CA bundles of --ca-bundle and --ca-bundle-data.
func (f *flags) readCABundle() ([]byte, error) {
	bundle, err := cafiles.Read("ca-bundle", f.caBundlePaths)
	if err != nil {
		return nil, err
	}
	for _, b64 := range f.caBundleData {
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("decoding --ca-bundle-data: %w", err)
		}
		bundle = append(append(bundle, data...), '\n')
	}
	return bundle, nil
}

// openSessionCache opens --session-cache, by default in $XDG_CONFIG_HOME or ~/.config. With
// --debug-session-cache every read and write of it is logged to stderr.
func (f *flags) openSessionCache(d deps.Deps) (oidclogin.SessionCache, error) {
	path := f.sessionCache
	if path == "" {
		if xdg := d.Getenv("XDG_CONFIG_HOME"); xdg != "" {
			path = sessioncache.DefaultPath("", xdg)
		} else {
			path = defaultSessionCache
		}
	}
	path, err := credentialplugin.ExpandHome(path, d.HomeDir)
	if err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(d.ErrOut, "pinniped: session cache: "+format+"\n", args...)
	}
	opts := []sessioncache.Option{sessioncache.WithClock(d.Now)}
	if f.debugSessionCache || d.Getenv(debugEnv) == "true" {
		opts = append(opts, sessioncache.WithErrorReporter(func(err error) { logf("%v", err) }))
	}
	cache := sessioncache.New(path, opts...)
	if !f.debugSessionCache {
		return cache, nil
	}
	logf("using %s", path)
	return debugSessions{cache: cache, logf: logf}, nil
}

// debugSessions logs what is looked up in and stored to a session cache, never the tokens.
type debugSessions struct {
	cache oidclogin.SessionCache
	logf  func(format string, args ...any)
}

func (s debugSessions) GetToken(key oidclogin.SessionKey) *oidclogin.Token {
	tok := s.cache.GetToken(key)
	if tok == nil {
		s.logf("no session found for %s", describeKey(key))
	} else {
		s.logf("found the session for %s", describeKey(key))
	}
	return tok
}

func (s debugSessions) PutToken(key oidclogin.SessionKey, tok *oidclogin.Token) {
	s.cache.PutToken(key, tok)
	s.logf("stored the session for %s", describeKey(key))
}

func describeKey(k oidclogin.SessionKey) string {
	return fmt.Sprintf("issuer %s, client %s, scopes %v, redirect URI %s, identity provider %q", k.Issuer, k.ClientID, k.Scopes, k.RedirectURI, k.UpstreamProviderName)
}

// explain adds what the user can do about a failed login.
func explain(err error) error {
	switch {
	case errors.Is(err, oidclogin.ErrUntrustedCertificate):
		return fmt.Errorf("could not complete the OIDC login: %w (give the issuer's CA bundle with --ca-bundle or --ca-bundle-data)", err)
	case errors.Is(err, oidclogin.ErrNoCredentials):
		return fmt.Errorf("could not complete the OIDC login: %w (or set $%s and $%s)", err, usernameEnv, passwordEnv)
	}
	return fmt.Errorf("could not complete the OIDC login: %w", err)
}
