// Command pinniped-concierge runs the Concierge: the aggregated TokenCredentialRequest and
// WhoAmIRequest APIs and the controllers behind them.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"sealion.dev/servers/concierge/server"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(server.NewCommand(ctx)))
}
