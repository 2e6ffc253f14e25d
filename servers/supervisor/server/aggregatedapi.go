package server

import (
	"context"
	"errors"
	"fmt"

	genericapiserver "k8s.io/apiserver/pkg/server"

	"sealion.dev/core/servingcert"
	"sealion.dev/servers/supervisor/apiserver"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
	"sealion.dev/servers/supervisor/registry/oidcclientsecretrequest"
)

// aggregatedAPI is the OIDCClientSecretRequest API server and the controller of its serving
// certificate, which also keeps the APIService's caBundle current.
type aggregatedAPI struct {
	server  *genericapiserver.GenericAPIServer
	serving *servingcert.Controller
}

// newAggregatedAPI constructs the OIDCClientSecretRequest API server; it starts nothing.
func (c completedConfig) newAggregatedAPI() (*aggregatedAPI, error) {
	completed, err := (&apiserver.Config{GenericConfig: c.APIServer, ExtraConfig: apiserver.ExtraConfig{
		Scheme: c.Scheme,
		ClientSecrets: oidcclientsecretrequest.Config{
			Namespace:   c.Namespace,
			OIDCClients: c.SupervisorClient.ConfigV1alpha1().OIDCClients(c.Namespace),
			Store:       &clientsecrets.Store{Secrets: c.KubeClient.CoreV1().Secrets(c.Namespace), Labels: c.File.Labels},
			Audit:       c.audit,
		},
	}}).Complete()
	if err != nil {
		return nil, err
	}
	server, err := completed.New()
	if err != nil {
		return nil, err
	}
	return &aggregatedAPI{server: server, serving: c.Serving}, nil
}

// start runs the certificate controller and, once it has a certificate (the generic server
// refuses to start without one), the API server. It sends the outcome to errc: nil once ctx
// ended and the server shut down cleanly, an error when either stopped before.
func (a *aggregatedAPI) start(ctx context.Context, errc chan<- error) {
	runCtx, cancel := context.WithCancelCause(ctx)
	go func() {
		if err := a.serving.Run(runCtx); err != nil {
			cancel(fmt.Errorf("the aggregated API's serving certificate controller: %w", err))
		}
	}()
	go func() {
		defer cancel(nil)
		select {
		case <-a.serving.Provider().Ready():
			err := a.server.PrepareRun().RunWithContext(runCtx)
			if err != nil {
				errc <- fmt.Errorf("the aggregated API server: %w", err)
				return
			}
		case <-runCtx.Done():
		}
		if ctx.Err() == nil {
			err := context.Cause(runCtx) // the certificate controller's failure, if any
			if err == nil {
				err = errors.New("the aggregated API server stopped")
			}
			errc <- err
			return
		}
		errc <- nil
	}()
}
