// Package static implements "pinniped login static", the kubectl credential plugin for static
// tokens: it prints the token as an ExecCredential, or, with --enable-concierge, exchanges it at the
// Concierge for a short-lived client certificate and prints that.
package static

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	clientauthv1beta1 "k8s.io/client-go/pkg/apis/clientauthentication/v1beta1"

	"sealion.dev/cli/internal/credentialplugin"
	"sealion.dev/cli/internal/deps"
	"sealion.dev/cli/internal/execcredential"
)

type flags struct {
	token           string
	tokenEnv        string
	concierge       credentialplugin.ConciergeFlags
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
			return run(cmd.Context(), d, &f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.token, "token", "", "Static token to present during login")
	fs.StringVar(&f.tokenEnv, "token-env", "", "Environment variable containing a static token")
	f.concierge.AddFlags(cmd)
	fs.StringVar(&f.credentialCache, "credential-cache", credentialplugin.DefaultCredentialCache, "Path to cluster-specific credentials cache (\"\" disables the cache)")
	cmd.MarkFlagsMutuallyExclusive("token", "token-env")
	return cmd
}

func run(ctx context.Context, d deps.Deps, f *flags) error {
	token, err := f.readToken(d.Getenv)
	if err != nil {
		return err
	}
	info, err := execcredential.ReadInfo(d.Getenv)
	if err != nil {
		return err
	}
	cfg, err := f.concierge.Config(info)
	if err != nil {
		return err
	}
	if cfg == nil {
		// The token is the credential; there is nothing worth caching.
		return execcredential.Write(d.Out, info.APIVersion, &clientauthv1beta1.ExecCredentialStatus{Token: token})
	}

	cache, err := credentialplugin.OpenCredentialCache(d, f.credentialCache, info)
	if err != nil {
		return err
	}
	if cached := cache.Get(); cached != nil {
		return execcredential.Write(d.Out, info.APIVersion, cached)
	}
	status, err := credentialplugin.Exchange(ctx, d, *cfg, token)
	if err != nil {
		return err
	}
	cache.Put(status)
	return execcredential.Write(d.Out, info.APIVersion, status)
}

func (f *flags) readToken(getenv func(string) string) (string, error) {
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
