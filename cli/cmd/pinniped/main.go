// Command pinniped is the Pinniped CLI: it generates Pinniped kubeconfigs and serves as their
// kubectl credential plugin.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"sealion.dev/cli/internal/cmd/root"
	"sealion.dev/cli/internal/cmdtrace"
	"sealion.dev/cli/internal/deps"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := root.NewCommand(deps.Default()).ExecuteContext(cmdtrace.Join(ctx, os.Getenv))
	stop()
	if err != nil {
		os.Exit(1)
	}
}
