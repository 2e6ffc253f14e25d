// Package kubeconfig implements "pinniped get kubeconfig": it discovers how the cluster's
// Concierge issues credentials (CredentialIssuer strategy frontend and authenticator) and writes a
// kubeconfig whose user runs "pinniped login static" or "pinniped login oidc" as a kubectl
// credential plugin.
package kubeconfig

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sealion.dev/cli/internal/cafiles"
	"sealion.dev/cli/internal/clientconfig"
	"sealion.dev/cli/internal/deps"
	"sealion.dev/cli/pkg/oidclogin"
	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	"sealion.dev/core/groupsuffix"
)

const (
	execAPIVersion     = "client.authentication.k8s.io/v1beta1"
	defaultInstallHint = "The pinniped CLI is required to authenticate to this cluster. Install it from the Pinniped release page and put it on your PATH (or regenerate this kubeconfig with --pinniped-cli-path)."
	defaultClientID    = "pinniped-cli"
	pollInterval       = 2 * time.Second
)

var defaultScopes = []string{"offline_access", "openid", "pinniped:request-audience", "username", "groups"}

type flags struct {
	kubeconfig          string
	kubeconfigContext   string
	output              string
	generatedNameSuffix string
	timeout             time.Duration
	skipValidation      bool

	staticToken    string
	staticTokenEnv string

	noConcierge      bool
	credentialIssuer string
	authType         string
	authName         string
	apiGroupSuffix   string
	mode             string
	endpoint         string
	caBundlePaths    []string
	skipWait         bool

	oidcIssuer          string
	oidcClientID        string
	oidcScopes          []string
	oidcScopesSet       bool
	oidcListenPort      uint16
	oidcSkipBrowser     bool
	oidcSkipListen      bool
	oidcSessionCache    string
	oidcDebugSessions   bool
	oidcCABundlePaths   []string
	oidcRequestAudience string
	upstreamIDPName     string
	upstreamIDPType     string
	upstreamIDPFlow     string
	oidcFlow            string

	credentialCache    string
	credentialCacheSet bool
	cliPath            string
	installHint        string

	// pollInterval is how often a pending CredentialIssuer and the new kubeconfig's endpoint are
	// checked (2 s; tests shorten it).
	pollInterval time.Duration
}

// NewCommand returns the "kubeconfig" subcommand of "get".
func NewCommand(d deps.Deps) *cobra.Command {
	return newCommand(d, pollInterval)
}

func newCommand(d deps.Deps, interval time.Duration) *cobra.Command {
	f := flags{pollInterval: interval}
	cmd := &cobra.Command{
		Use:          "kubeconfig",
		Short:        "Generate a Pinniped-based kubeconfig for a cluster",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Passed through whenever given, even empty: "" turns the login command's cache off.
			f.credentialCacheSet = cmd.Flags().Changed("credential-cache")
			f.oidcScopesSet = cmd.Flags().Changed("oidc-scopes")
			return run(cmd.Context(), d, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&f.kubeconfigContext, "kubeconfig-context", "", "Kubeconfig context name (default: current active context)")
	fs.StringVarP(&f.output, "output", "o", "", "Output file path (default: stdout)")
	fs.StringVar(&f.generatedNameSuffix, "generated-name-suffix", "-pinniped", "Suffix to append to generated cluster, context, user kubeconfig entries")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "Timeout for autodiscovery and validation")
	fs.BoolVar(&f.skipValidation, "skip-validation", false, "Skip final validation of the kubeconfig")

	fs.StringVar(&f.staticToken, "static-token", "", "Instead of doing an OIDC-based login, specify a static token")
	fs.StringVar(&f.staticTokenEnv, "static-token-env", "", "Instead of doing an OIDC-based login, read a static token from the environment")

	fs.BoolVar(&f.noConcierge, "no-concierge", false, "Generate a configuration which does not use the Concierge, but sends the credential to the cluster directly")
	fs.StringVar(&f.credentialIssuer, "concierge-credential-issuer", "", "Concierge CredentialIssuer object to use for autodiscovery (default: autodiscover)")
	fs.StringVar(&f.authType, "concierge-authenticator-type", "", "Concierge authenticator type (e.g., 'webhook', 'jwt') (default: autodiscover)")
	fs.StringVar(&f.authName, "concierge-authenticator-name", "", "Concierge authenticator name (default: autodiscover)")
	fs.StringVar(&f.apiGroupSuffix, "concierge-api-group-suffix", groupsuffix.Default, "Concierge API group suffix")
	fs.StringVar(&f.mode, "concierge-mode", "", "Concierge mode of operation: TokenCredentialRequestAPI or ImpersonationProxy (default: autodiscover)")
	fs.StringVar(&f.endpoint, "concierge-endpoint", "", "API base for the Concierge endpoint (default: autodiscover)")
	fs.StringSliceVar(&f.caBundlePaths, "concierge-ca-bundle", nil, "Path to TLS certificate authority bundle (PEM format) to use when connecting to the Concierge (can be repeated; default: autodiscover)")
	fs.BoolVar(&f.skipWait, "concierge-skip-wait", false, "Skip waiting for any pending Concierge strategies to become ready")

	fs.StringVar(&f.oidcIssuer, "oidc-issuer", "", "OpenID Connect issuer URL (default: autodiscover)")
	fs.StringVar(&f.oidcClientID, "oidc-client-id", defaultClientID, "OpenID Connect client ID")
	fs.StringSliceVar(&f.oidcScopes, "oidc-scopes", defaultScopes, "OpenID Connect scopes to request during login (when not given: those of the default that the issuer supports, or for an issuer other than a Supervisor, those of offline_access,openid,email,profile,groups that it supports)")
	fs.Uint16Var(&f.oidcListenPort, "oidc-listen-port", 0, "TCP port for localhost listener (authorization code flow only)")
	fs.BoolVar(&f.oidcSkipBrowser, "oidc-skip-browser", false, "During OpenID Connect login, skip opening the browser (just print the URL)")
	fs.StringVar(&f.oidcSessionCache, "oidc-session-cache", "", "Path to OpenID Connect session cache file")
	fs.StringSliceVar(&f.oidcCABundlePaths, "oidc-ca-bundle", nil, "Path to TLS certificate authority bundle (PEM format) to use when connecting to the OpenID Connect issuer (can be repeated; default: from the JWTAuthenticator)")
	fs.StringVar(&f.oidcRequestAudience, "oidc-request-audience", "", "Request a token with an alternate audience using RFC8693 token exchange (default: the JWTAuthenticator's audience when the issuer is a Supervisor)")
	fs.StringVar(&f.upstreamIDPName, "upstream-identity-provider-name", "", "The name of the upstream identity provider used during login with a Supervisor (default: the Supervisor's only one)")
	fs.StringVar(&f.upstreamIDPType, "upstream-identity-provider-type", "", "The type of the upstream identity provider used during login with a Supervisor (e.g. 'oidc', 'ldap', 'activedirectory', 'github')")
	fs.StringVar(&f.upstreamIDPFlow, "upstream-identity-provider-flow", "", "The type of client flow to use with the upstream identity provider during login with a Supervisor (e.g. 'browser_authcode', 'cli_password')")
	fs.StringVar(&f.oidcFlow, "oidc-flow", "", "How the kubeconfig's logins reach the issuer when the upstream identity provider's login is in a browser: 'browser' or 'device' (the device authorization grant: approve in a browser on any device, with a code) (default: the login command's default)")

	fs.StringVar(&f.credentialCache, "credential-cache", "", "Path to cluster-specific credentials cache (passed through to the login command only when set)")
	fs.StringVar(&f.cliPath, "pinniped-cli-path", "", "Full path or executable name for the Pinniped CLI binary to be embedded in the resulting kubeconfig output (default: this executable)")
	fs.StringVar(&f.installHint, "install-hint", defaultInstallHint, "Text shown to the user when the Pinniped CLI is not installed")

	// Hidden as upstream hides them: for debugging, and for kubeconfigs written by older CLIs.
	fs.BoolVar(&f.oidcSkipListen, "oidc-skip-listen", false, "During OpenID Connect login, skip starting a localhost callback listener (manual copy/paste flow only)")
	fs.BoolVar(&f.oidcDebugSessions, "oidc-debug-session-cache", false, "Print debug logs related to the OpenID Connect session cache")
	_ = fs.MarkHidden("oidc-skip-listen")
	_ = fs.MarkHidden("oidc-debug-session-cache")
	// Upstream accepts and ignores it; MarkDeprecated hides it and warns when it is used. pflag
	// writes that warning to the flag set's output: stderr, since cobra would print it to the
	// command's output, which is where the kubeconfig goes.
	fs.SetOutput(d.ErrOut)
	var ignoredNamespace string
	fs.StringVar(&ignoredNamespace, "concierge-namespace", "pinniped-concierge", "Namespace in which the Concierge was installed (no longer used)")
	_ = fs.MarkDeprecated("concierge-namespace", "the Concierge's APIs are cluster-scoped, so its namespace is no longer needed")
	cmd.MarkFlagsMutuallyExclusive("static-token", "static-token-env")
	return cmd
}

func run(ctx context.Context, d deps.Deps, f flags) error {
	mode := configv1alpha1.FrontendType(f.mode)
	switch mode {
	case "", configv1alpha1.FrontendTypeTokenCredentialRequestAPI, configv1alpha1.FrontendTypeImpersonationProxy:
	default:
		return fmt.Errorf("invalid --concierge-mode %q: must be %s or %s", f.mode, configv1alpha1.FrontendTypeTokenCredentialRequestAPI, configv1alpha1.FrontendTypeImpersonationProxy)
	}
	if f.authType != "" && f.authType != "jwt" && f.authType != "webhook" {
		return fmt.Errorf("invalid --concierge-authenticator-type %q: must be jwt or webhook", f.authType)
	}
	switch {
	case f.oidcFlow != "" && f.oidcFlow != oidclogin.LoginFlowBrowser && f.oidcFlow != oidclogin.LoginFlowDevice:
		return fmt.Errorf("invalid --oidc-flow %q: must be %s or %s", f.oidcFlow, oidclogin.LoginFlowBrowser, oidclogin.LoginFlowDevice)
	case f.oidcFlow == oidclogin.LoginFlowDevice && f.upstreamIDPFlow == oidclogin.FlowCLIPassword:
		return fmt.Errorf("--oidc-flow=%s logs in through a browser: it cannot use --upstream-identity-provider-flow=%s", oidclogin.LoginFlowDevice, oidclogin.FlowCLIPassword)
	}
	if strings.Contains(f.oidcRequestAudience, ".pinniped.dev") {
		return fmt.Errorf("--oidc-request-audience %q must not contain \".pinniped.dev\": that substring is reserved for the Supervisor's own audiences", f.oidcRequestAudience)
	}
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	if f.cliPath == "" {
		path, err := d.Executable()
		if err != nil {
			return fmt.Errorf("finding the path of this executable (set --pinniped-cli-path): %w", err)
		}
		f.cliPath = path
	}

	loaded, err := clientconfig.Load(f.kubeconfig, f.kubeconfigContext)
	if err != nil {
		return err
	}
	cluster, err := inlineCA(loaded.Cluster)
	if err != nil {
		return err
	}

	var args []string
	if f.noConcierge {
		if args, err = f.loginArgs(ctx, nil); err != nil {
			return err
		}
	} else {
		var c *concierge
		if c, err = f.discover(ctx, d, loaded, cluster); err != nil {
			return err
		}
		// kubectl talks to the Concierge's endpoint: the impersonation proxy, or the API server
		// that serves the TokenCredentialRequest API (as given by flag, if it was).
		cluster.Server, cluster.CertificateAuthorityData = c.endpoint, c.caBundle
		if args, err = f.loginArgs(ctx, c); err != nil {
			return err
		}
	}

	out := buildKubeconfig(loaded, cluster, f, args)
	if !f.skipValidation {
		if err := validate(ctx, cluster, f.pollInterval); err != nil {
			return err
		}
	}
	data, err := clientcmd.Write(*out)
	if err != nil {
		return fmt.Errorf("encoding the kubeconfig: %w", err)
	}
	if f.output == "" {
		_, err = d.Out.Write(data)
		return err
	}
	if err := os.WriteFile(f.output, data, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return nil
}

// concierge is everything discovered about the cluster's Concierge.
type concierge struct {
	endpoint      string
	caBundle      []byte
	authenticator *authenticator
}

// strategyNeeded reports whether the CredentialIssuer must have a successful strategy to tell what
// the flags do not: the mode, and for the impersonation proxy its endpoint and CA. The
// TokenCredentialRequest API needs none, since its endpoint and CA are the kubeconfig's cluster's.
// So a cluster whose strategy fails only for want of kube-public/cluster-info (Talos, Kamaji)
// still gets a kubeconfig with --concierge-mode TokenCredentialRequestAPI.
func (f flags) strategyNeeded() bool {
	switch configv1alpha1.FrontendType(f.mode) {
	case configv1alpha1.FrontendTypeTokenCredentialRequestAPI:
		return false
	case configv1alpha1.FrontendTypeImpersonationProxy:
		return f.endpoint == "" || len(f.caBundlePaths) == 0
	}
	return true
}

func (f flags) discover(ctx context.Context, d deps.Deps, loaded *clientconfig.Loaded, cluster *clientcmdapi.Cluster) (*concierge, error) {
	restCfg, err := clientconfig.WithAPIGroupSuffix(loaded.REST, f.apiGroupSuffix)
	if err != nil {
		return nil, err
	}
	client, err := d.NewConciergeClient(restCfg)
	if err != nil {
		return nil, fmt.Errorf("building a Concierge client: %w", err)
	}
	ci, err := credentialIssuer(ctx, client, f.credentialIssuer)
	if err != nil {
		return nil, err
	}
	needed := f.strategyNeeded()
	if needed && !f.skipWait {
		logf := func(msg string) { fmt.Fprintln(d.ErrOut, msg) }
		if ci, err = waitWhilePending(ctx, client, ci, f.pollInterval, logf); err != nil {
			return nil, err
		}
	}
	fe, err := chooseFrontend(ci, configv1alpha1.FrontendType(f.mode))
	switch {
	case err != nil && needed:
		return nil, err
	case err != nil:
		// The flags say everything; the kubeconfig may still work (the strategy may fail only
		// for want of kube-public/cluster-info), so say why it might not and go on.
		fmt.Fprintf(d.ErrOut, "warning: %v: using --concierge-mode %s with the endpoint and CA bundle %s\n", err, f.mode, givenOrFromKubeconfig(f))
		fe = &frontend{mode: configv1alpha1.FrontendType(f.mode)}
	}

	c := &concierge{}
	if fe.mode == configv1alpha1.FrontendTypeImpersonationProxy {
		c.endpoint, c.caBundle = fe.endpoint, fe.caBundle
	} else {
		// As Pinniped's CLI does: the aggregated API is reached through the API server of the
		// kubeconfig in use, not at the address the strategy advertises, which comes from
		// kube-public/cluster-info and is often an in-cluster name unreachable from here.
		c.endpoint, c.caBundle = cluster.Server, cluster.CertificateAuthorityData
	}
	if f.endpoint != "" {
		c.endpoint = f.endpoint
	}
	if len(f.caBundlePaths) > 0 {
		if c.caBundle, err = cafiles.Read("concierge-ca-bundle", f.caBundlePaths); err != nil {
			return nil, err
		}
	}
	if c.endpoint == "" {
		return nil, fmt.Errorf("CredentialIssuer %s advertises no impersonation proxy endpoint: pass --concierge-endpoint", ci.Name)
	}
	if c.authenticator, err = findAuthenticator(ctx, client, f.authType, f.authName); err != nil {
		return nil, err
	}
	return c, nil
}

// givenOrFromKubeconfig says where the endpoint and CA bundle come from when no strategy tells.
func givenOrFromKubeconfig(f flags) string {
	if f.endpoint != "" || len(f.caBundlePaths) > 0 {
		return "given by flag (the kubeconfig's cluster's where not given)"
	}
	return "of the kubeconfig's cluster"
}

// loginArgs is the plugin command line in the order Pinniped's CLI writes it: the login command
// ("login static" for a static token, else "login oidc"), the Concierge's flags, the credential
// cache, then the command's own flags.
func (f flags) loginArgs(ctx context.Context, c *concierge) ([]string, error) {
	static := f.staticToken != "" || f.staticTokenEnv != ""
	args := []string{"login", "oidc"}
	if static {
		args = []string{"login", "static"}
	} else if c != nil && c.authenticator.cliType == "webhook" {
		return nil, fmt.Errorf("WebhookAuthenticator %s accepts static tokens only: use --static-token or --static-token-env", c.authenticator.name)
	}
	if c != nil {
		args = append(args,
			"--enable-concierge",
			"--concierge-api-group-suffix="+f.apiGroupSuffix,
			"--concierge-authenticator-name="+c.authenticator.name,
			"--concierge-authenticator-type="+c.authenticator.cliType,
			"--concierge-endpoint="+c.endpoint,
			"--concierge-ca-bundle-data="+base64.StdEncoding.EncodeToString(c.caBundle),
		)
	}
	if f.credentialCacheSet {
		args = append(args, "--credential-cache="+f.credentialCache)
	}
	switch {
	case f.staticToken != "":
		return append(args, "--token="+f.staticToken), nil
	case static:
		return append(args, "--token-env="+f.staticTokenEnv), nil
	}
	oidc, err := f.oidcArgs(ctx, c)
	if err != nil {
		return nil, err
	}
	return append(args, oidc...), nil
}

// oidcArgs fills the issuer, audience and CA from the JWTAuthenticator unless the flags give them,
// and adapts the rest to what the issuer's discovery document says: a Pinniped Supervisor gets the
// JWTAuthenticator's audience as request audience and its identity provider, while another issuer
// issues the cluster's tokens itself, so it gets neither.
func (f flags) oidcArgs(ctx context.Context, c *concierge) ([]string, error) {
	issuer, audience := f.oidcIssuer, f.oidcRequestAudience
	var caBundle []byte
	var jwtAudience string
	if c != nil && c.authenticator.jwt != nil {
		spec := c.authenticator.jwt
		if issuer == "" {
			issuer = spec.Issuer
		}
		jwtAudience = spec.Audience
		if tls := spec.TLS; tls != nil && tls.CertificateAuthorityData != "" {
			ca, err := base64.StdEncoding.DecodeString(tls.CertificateAuthorityData)
			if err != nil {
				return nil, fmt.Errorf("decoding the CA bundle of JWTAuthenticator %s: %w", c.authenticator.name, err)
			}
			caBundle = ca
		} else if tls != nil && tls.CertificateAuthorityDataSource != nil && len(f.oidcCABundlePaths) == 0 {
			return nil, fmt.Errorf("JWTAuthenticator %s takes its CA bundle from %s %s, which this command does not read: pass it with --oidc-ca-bundle",
				c.authenticator.name, tls.CertificateAuthorityDataSource.Kind, tls.CertificateAuthorityDataSource.Name)
		}
	}
	if issuer == "" {
		return nil, errors.New("no OIDC issuer is known: pass --oidc-issuer, --static-token or --static-token-env")
	}
	if len(f.oidcCABundlePaths) > 0 {
		ca, err := cafiles.Read("oidc-ca-bundle", f.oidcCABundlePaths)
		if err != nil {
			return nil, err
		}
		caBundle = ca
	}

	client, err := oidclogin.NewHTTPClient(caBundle)
	if err != nil {
		return nil, err
	}
	disc, err := oidclogin.Discover(ctx, client, issuer)
	if errors.Is(err, oidclogin.ErrUntrustedCertificate) {
		return nil, fmt.Errorf("%w (pass the issuer's CA bundle with --oidc-ca-bundle)", err)
	} else if err != nil {
		return nil, err
	}
	scopes := f.oidcScopes
	if !f.oidcScopesSet {
		scopes = defaultScopesFor(disc)
	}
	if f.oidcFlow == oidclogin.LoginFlowDevice && disc.DeviceAuthorizationEndpoint == "" {
		return nil, fmt.Errorf("--oidc-flow=%s: %s offers no device authorization endpoint", oidclogin.LoginFlowDevice, issuer)
	}
	idpName, idpType := f.upstreamIDPName, f.upstreamIDPType
	if disc.IsSupervisor() {
		if audience == "" {
			audience = jwtAudience
		}
		if idpName, idpType, err = f.chooseIdentityProvider(ctx, disc, client); err != nil {
			return nil, err
		}
	} else if idpName != "" || idpType != "" || f.upstreamIDPFlow != "" {
		return nil, fmt.Errorf("the --upstream-identity-provider-* flags are for Pinniped Supervisors, and %s is not one", issuer)
	}

	args := []string{"--issuer=" + issuer, "--client-id=" + f.oidcClientID, "--scopes=" + strings.Join(scopes, ",")}
	if f.oidcSkipBrowser {
		args = append(args, "--skip-browser")
	}
	if f.oidcSkipListen {
		args = append(args, "--skip-listen")
	}
	if f.oidcListenPort != 0 {
		args = append(args, "--listen-port="+strconv.Itoa(int(f.oidcListenPort)))
	}
	if len(caBundle) > 0 {
		args = append(args, "--ca-bundle-data="+base64.StdEncoding.EncodeToString(caBundle))
	}
	if f.oidcSessionCache != "" {
		args = append(args, "--session-cache="+f.oidcSessionCache)
	}
	if f.oidcDebugSessions {
		args = append(args, "--debug-session-cache")
	}
	if audience != "" {
		args = append(args, "--request-audience="+audience)
	}
	for _, p := range [][2]string{
		{"--upstream-identity-provider-name", idpName},
		{"--upstream-identity-provider-type", idpType},
		{"--upstream-identity-provider-flow", f.upstreamIDPFlow},
		{"--flow", f.oidcFlow},
	} {
		if p[1] != "" {
			args = append(args, p[0]+"="+p[1])
		}
	}
	return args, nil
}

// genericScopes are the standard scopes asked of an issuer that is not a Supervisor: its tokens go
// to the cluster as they are, so they should carry the email, profile and groups claims a
// JWTAuthenticator usually maps.
var genericScopes = []string{"offline_access", "openid", "email", "profile", "groups"}

// defaultScopesFor returns the default scopes that the issuer says it supports (all of them when
// it does not say).
func defaultScopesFor(disc *oidclogin.Discovery) []string {
	wanted := defaultScopes
	if !disc.IsSupervisor() {
		wanted = genericScopes
	}
	if len(disc.ScopesSupported) == 0 {
		if disc.IsSupervisor() {
			return wanted
		}
		// Without a list, ask only for what every issuer knows.
		return []string{"offline_access", "openid", "email", "profile"}
	}
	var scopes []string
	for _, s := range wanted {
		if s == "openid" || slices.Contains(disc.ScopesSupported, s) {
			scopes = append(scopes, s)
		}
	}
	return scopes
}

// chooseIdentityProvider picks the Supervisor's identity provider: the one named, else its only
// one. It returns the name and type for the login command (empty when the Supervisor lists none).
func (f flags) chooseIdentityProvider(ctx context.Context, disc *oidclogin.Discovery, client *http.Client) (string, string, error) {
	idps, err := disc.IdentityProviders(ctx, client)
	if err != nil {
		return "", "", err
	}
	var idp *oidclogin.IdentityProvider
	switch {
	case f.upstreamIDPName != "":
		if idp, err = oidclogin.FindIdentityProvider(idps, f.upstreamIDPName, f.upstreamIDPType); err != nil {
			return "", "", err
		}
	case len(idps) == 0:
		return "", f.upstreamIDPType, nil
	case len(idps) == 1:
		idp = &idps[0]
	default:
		var names []string
		for _, p := range idps {
			names = append(names, fmt.Sprintf("%q (%s)", p.Name, p.Type))
		}
		return "", "", fmt.Errorf("the Supervisor %s has several identity providers (%s): choose one with --upstream-identity-provider-name", disc.Issuer, strings.Join(names, ", "))
	}
	if flow := f.upstreamIDPFlow; flow != "" && len(idp.Flows) > 0 && !slices.Contains(idp.Flows, flow) {
		return "", "", fmt.Errorf("identity provider %q supports the login flows %s, not %s", idp.Name, strings.Join(idp.Flows, ", "), flow)
	}
	return idp.Name, idp.Type, nil
}

// inlineCA copies the cluster with its CA file, if any, read into the data field, so the new
// kubeconfig stands on its own.
func inlineCA(in *clientcmdapi.Cluster) (*clientcmdapi.Cluster, error) {
	out := in.DeepCopy()
	if len(out.CertificateAuthorityData) == 0 && out.CertificateAuthority != "" {
		ca, err := os.ReadFile(out.CertificateAuthority)
		if err != nil {
			return nil, fmt.Errorf("reading the cluster's CA file: %w", err)
		}
		out.CertificateAuthorityData = ca
	}
	out.CertificateAuthority = ""
	out.LocationOfOrigin = ""
	out.Extensions = nil
	return out, nil
}

// buildKubeconfig names the new cluster, user and context each after the admin kubeconfig's own
// entry with the suffix, as Pinniped's CLI does, so that kubeconfigs merged from several clusters
// keep their entries apart as the originals do.
func buildKubeconfig(loaded *clientconfig.Loaded, cluster *clientcmdapi.Cluster, f flags, args []string) *clientcmdapi.Config {
	name := loaded.ContextName + f.generatedNameSuffix
	clusterName := loaded.Context.Cluster + f.generatedNameSuffix
	userName := loaded.Context.AuthInfo + f.generatedNameSuffix
	out := clientcmdapi.NewConfig()
	out.Clusters[clusterName] = cluster
	out.AuthInfos[userName] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion:         execAPIVersion,
		Command:            f.cliPath,
		Args:               args,
		Env:                []clientcmdapi.ExecEnvVar{},
		ProvideClusterInfo: true,
		InstallHint:        f.installHint,
		InteractiveMode:    clientcmdapi.IfAvailableExecInteractiveMode,
	}}
	out.Contexts[name] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: userName, Namespace: loaded.Context.Namespace}
	out.CurrentContext = name
	return out
}
