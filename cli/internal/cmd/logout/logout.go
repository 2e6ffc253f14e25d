// Package logout implements "pinniped logout", an addition to Pinniped's CLI: it signs the user
// of the current kubeconfig out of the issuer that "pinniped login oidc" logs in with. The issuer
// revokes the session (RFC 7009; a Supervisor then deletes it and revokes its upstream tokens),
// and the session and cached cluster credentials leave this machine, so that the next kubectl
// command asks for a new login.
package logout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"sealion.dev/cli/internal/clientconfig"
	"sealion.dev/cli/internal/cmd/login/oidc"
	"sealion.dev/cli/internal/deps"
	"sealion.dev/cli/pkg/oidclogin"
)

type flags struct {
	kubeconfig        string
	kubeconfigContext string
	timeout           time.Duration
}

// NewCommand returns the "logout" command.
func NewCommand(d deps.Deps) *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:   "logout",
		Short: "End the session of the current kubeconfig's OIDC login",
		Long: "End the session of the current kubeconfig's \"pinniped login oidc\" user: the issuer revokes it, and it leaves " +
			"this machine's session cache, with the cached cluster credentials. The next kubectl command logs in again.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), d, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&f.kubeconfigContext, "kubeconfig-context", "", "Kubeconfig context name (default: current active context)")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "Timeout for the requests to the issuer")
	return cmd
}

func run(ctx context.Context, d deps.Deps, f flags) error {
	loaded, err := clientconfig.Load(f.kubeconfig, f.kubeconfigContext)
	if err != nil {
		return err
	}
	args, ok := oidc.ArgsOf(loaded)
	if !ok {
		return fmt.Errorf("the user of context %q does not log in with \"pinniped login oidc\": there is no session to end", loaded.ContextName)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	issuer, found, err := oidc.Logout(ctx, d, args)
	switch {
	case errors.Is(err, oidclogin.ErrNoRevocationEndpoint):
		fmt.Fprintf(d.ErrOut, "warning: %s: %v\n", issuer, err)
		_, err = fmt.Fprintf(d.Out, "Removed the session at %s from this machine, with the cached cluster credentials.\n", issuer)
		return err
	case err != nil && found:
		return fmt.Errorf("the session at %s was removed from this machine, but: %w", issuer, err)
	case err != nil:
		return err
	case !found:
		_, err = fmt.Fprintf(d.Out, "No session at %s on this machine: nothing to end. Cached cluster credentials were removed.\n", issuer)
		return err
	}
	_, err = fmt.Fprintf(d.Out, "Logged out of %s: the session was ended there and removed from this machine, with the cached cluster credentials.\n", issuer)
	return err
}
