// Package root assembles the pinniped command tree.
package root

import (
	"github.com/spf13/cobra"

	"sealion.dev/cli/internal/cmd/completion"
	"sealion.dev/cli/internal/cmd/get/kubeconfig"
	"sealion.dev/cli/internal/cmd/login/oidc"
	"sealion.dev/cli/internal/cmd/login/static"
	"sealion.dev/cli/internal/cmd/version"
	"sealion.dev/cli/internal/cmd/whoami"
	"sealion.dev/cli/internal/deps"
)

// NewCommand returns the "pinniped" command with all its subcommands.
func NewCommand(d deps.Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:          "pinniped",
		Short:        "pinniped",
		Long:         "pinniped is the client-side binary for use with Pinniped-enabled Kubernetes clusters.",
		SilenceUsage: true,
		// Our own "completion" command replaces cobra's default one.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	cmd.SetIn(d.In)
	cmd.SetOut(d.Out)
	cmd.SetErr(d.ErrOut)

	get := &cobra.Command{Use: "get", Short: "get", Args: cobra.NoArgs}
	get.AddCommand(kubeconfig.NewCommand(d))
	login := &cobra.Command{Use: "login", Short: "login", Long: "Login to a Pinniped server", Args: cobra.NoArgs}
	login.AddCommand(oidc.NewCommand(d), static.NewCommand(d))

	cmd.AddCommand(get, login, whoami.NewCommand(d), version.NewCommand(d), completion.NewCommand(d))
	return cmd
}
