// Package static implements "pinniped login static", the kubectl credential plugin for static
// tokens: it prints the token as an ExecCredential, or, with --enable-concierge, exchanges it at the
// Concierge for a short-lived client certificate and prints that.
package static

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientauthv1beta1 "k8s.io/client-go/pkg/apis/clientauthentication/v1beta1"

	"sealion.dev/cli/internal/deps"
	"sealion.dev/cli/internal/execcredential"
	"sealion.dev/cli/pkg/conciergeclient"
	"sealion.dev/cli/pkg/credentialcache"
	"sealion.dev/core/groupsuffix"
)

// DefaultCredentialCache is the --credential-cache default; "~/" is the user's home.
const DefaultCredentialCache = "~/.config/pinniped/credentials.yaml"

// exchangeTimeout bounds the TokenCredentialRequest.
const exchangeTimeout = 30 * time.Second

type flags struct {
	token           string
	tokenEnv        string
	enableConcierge bool
	authType        string
	authName        string
	endpoint        string
	caBundleData    string
	apiGroupSuffix  string
	credentialCache string
}

// NewCommand returns the "static" subcommand of "login".
func NewCommand(d deps.Deps) *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:          "static [--token TOKEN] [--token-env TOKEN_ENV]",
		Short:        "Login using a static token",
		Long:         "Login using a static token. Meant to be run by kubectl as a credential plugin (from a kubeconfig made by \"pinniped get kubeconfig\"), not by hand.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), d, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.token, "token", "", "Static token to present during login")
	fs.StringVar(&f.tokenEnv, "token-env", "", "Environment variable containing a static token")
	fs.BoolVar(&f.enableConcierge, "enable-concierge", false, "Exchange the token with the Pinniped Concierge during login")
	fs.StringVar(&f.authType, "concierge-authenticator-type", "", "Concierge authenticator type (e.g., 'webhook', 'jwt')")
	fs.StringVar(&f.authName, "concierge-authenticator-name", "", "Concierge authenticator name")
	fs.StringVar(&f.endpoint, "concierge-endpoint", "", "API base for the Concierge endpoint (default: the cluster kubectl passes in KUBERNETES_EXEC_INFO)")
	fs.StringVar(&f.caBundleData, "concierge-ca-bundle-data", "", "CA bundle to use when connecting to the Concierge (base64-encoded PEM)")
	fs.StringVar(&f.apiGroupSuffix, "concierge-api-group-suffix", groupsuffix.Default, "Concierge API group suffix")
	fs.StringVar(&f.credentialCache, "credential-cache", DefaultCredentialCache, "Path to cluster-specific credentials cache (\"\" disables the cache)")
	cmd.MarkFlagsMutuallyExclusive("token", "token-env")
	return cmd
}

func run(ctx context.Context, d deps.Deps, f flags) error {
	token, err := f.readToken(d.Getenv)
	if err != nil {
		return err
	}
	info, err := execcredential.ReadInfo(d.Getenv)
	if err != nil {
		return err
	}
	if !f.enableConcierge {
		// The token is the credential; there is nothing worth caching.
		return execcredential.Write(d.Out, info.APIVersion, &clientauthv1beta1.ExecCredentialStatus{Token: token})
	}
	cfg, err := f.conciergeConfig(info)
	if err != nil {
		return err
	}

	var cache *credentialcache.Cache
	key := credentialcache.Key{Args: d.Args, Cluster: info.Cluster}
	if f.credentialCache != "" {
		path, err := expandHome(f.credentialCache, d.HomeDir)
		if err != nil {
			return err
		}
		cache = credentialcache.New(path, credentialcache.WithClock(d.Now))
		cached, err := cache.Get(key)
		if err != nil {
			// A broken cache must not block the login; say so and carry on without it.
			fmt.Fprintf(d.ErrOut, "warning: reading the credential cache: %v\n", err)
		}
		if cached != nil {
			return execcredential.Write(d.Out, info.APIVersion, cached)
		}
	}

	ctx, cancel := context.WithTimeout(ctx, exchangeTimeout)
	defer cancel()
	cred, err := d.ExchangeToken(ctx, cfg, token)
	if err != nil {
		return fmt.Errorf("could not complete the Concierge credential exchange: %w", err)
	}
	status := &clientauthv1beta1.ExecCredentialStatus{
		ExpirationTimestamp:   ptrTime(cred.ExpirationTimestamp),
		Token:                 cred.Token,
		ClientCertificateData: cred.ClientCertificateData,
		ClientKeyData:         cred.ClientKeyData,
	}
	if cache != nil {
		if err := cache.Put(key, status); err != nil {
			fmt.Fprintf(d.ErrOut, "warning: writing the credential cache: %v\n", err)
		}
	}
	return execcredential.Write(d.Out, info.APIVersion, status)
}

func (f flags) readToken(getenv func(string) string) (string, error) {
	switch {
	case f.token != "":
		return f.token, nil
	case f.tokenEnv != "":
		token := getenv(f.tokenEnv)
		if token == "" {
			return "", fmt.Errorf("--token-env variable %q is empty", f.tokenEnv)
		}
		return token, nil
	}
	return "", errors.New("one of --token or --token-env is required")
}

// conciergeConfig fills in the Concierge's endpoint and CA from the cluster kubectl names when the
// flags do not give them.
func (f flags) conciergeConfig(info *execcredential.Info) (conciergeclient.Config, error) {
	kind, err := conciergeclient.AuthenticatorKind(f.authType)
	if err != nil {
		return conciergeclient.Config{}, fmt.Errorf("--concierge-authenticator-type: %w", err)
	}
	if f.authName == "" {
		return conciergeclient.Config{}, errors.New("--concierge-authenticator-name is required with --enable-concierge")
	}
	cfg := conciergeclient.Config{
		Endpoint:          f.endpoint,
		APIGroupSuffix:    f.apiGroupSuffix,
		AuthenticatorKind: kind,
		AuthenticatorName: f.authName,
	}
	if cfg.CABundle, err = conciergeclient.DecodeCABundle(f.caBundleData); err != nil {
		return conciergeclient.Config{}, fmt.Errorf("--concierge-ca-bundle-data: %w", err)
	}
	if cfg.Endpoint == "" {
		if info.Cluster == nil {
			return conciergeclient.Config{}, errors.New("--concierge-endpoint is required when kubectl does not provide cluster info (provideClusterInfo: true)")
		}
		cfg.Endpoint = info.Cluster.Server
		if cfg.CABundle == nil {
			cfg.CABundle = info.Cluster.CertificateAuthorityData
		}
	}
	return cfg, nil
}

func expandHome(path string, homeDir func() (string, error)) (string, error) {
	rest, ok := strings.CutPrefix(path, "~/")
	if !ok {
		return path, nil
	}
	home, err := homeDir()
	if err != nil {
		return "", fmt.Errorf("finding the home directory for %s: %w", path, err)
	}
	return filepath.Join(home, rest), nil
}

func ptrTime(t metav1.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
