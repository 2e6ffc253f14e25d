// Command pinniped-supervisor runs the Supervisor: the OIDC issuers of its FederationDomains and the
// controllers behind them.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"sealion.dev/servers/supervisor/server"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(server.NewCommand(ctx)))
}
