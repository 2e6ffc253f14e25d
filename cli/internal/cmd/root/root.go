// Package root assembles the pinniped command tree.
package root

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"sealion.dev/cli/internal/cmd/completion"
	"sealion.dev/cli/internal/cmd/get/kubeconfig"
	"sealion.dev/cli/internal/cmd/login/oidc"
	"sealion.dev/cli/internal/cmd/login/static"
	"sealion.dev/cli/internal/cmd/logout"
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

	get := group(&cobra.Command{Use: "get", Short: "get"}, kubeconfig.NewCommand(d))
	login := group(&cobra.Command{Use: "login", Short: "login", Long: "Login to a Pinniped server"},
		oidc.NewCommand(d), static.NewCommand(d))

	cmd.AddCommand(get, login, logout.NewCommand(d), whoami.NewCommand(d), version.NewCommand(d), completion.NewCommand(d))
	return cmd
}

// group makes cmd a command that only holds subs. Alone it prints its help. Cobra checks the
// arguments of the root only, so a misspelt subcommand ("get kubecnfig") would print the help
// too and exit 0; here it fails, naming the closest subcommands as the root does.
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.AddCommand(subs...)
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2 // cobra's default, which only the root gets by itself
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if suggestions := cmd.SuggestionsFor(args[0]); len(suggestions) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(suggestions, "\n\t")
		}
		return fmt.Errorf("%s\n\nRun '%s --help' for usage.", msg, cmd.CommandPath())
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	return cmd
}
