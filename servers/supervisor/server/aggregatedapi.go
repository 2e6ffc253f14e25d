package server

import (
	"context"
	"errors"
	"fmt"
	"net"

	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	"sealion.dev/core/servingcert"
	"sealion.dev/servers/internal/aggregatedapi"
	"sealion.dev/servers/supervisor/apiserver"
	"sealion.dev/servers/supervisor/config"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
	"sealion.dev/servers/supervisor/registry/oidcclientsecretrequest"
)

// aggregatedAPI is the OIDCClientSecretRequest API server and the controller of its serving
// certificate, which also keeps the APIService's caBundle current.
type aggregatedAPI struct {
	server  *genericapiserver.GenericAPIServer
	serving *servingcert.Controller
}

func newAggregatedAPI(o *Options, cfg *config.Config, restConfig *rest.Config, kubeClient kubernetes.Interface,
	supervisorClient supervisorclientset.Interface,
) (*aggregatedAPI, error) {
	aggregator, err := aggregatorclient.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	scheme, err := apiserver.NewScheme(*cfg.APIGroupSuffix)
	if err != nil {
		return nil, err
	}
	serving, err := servingcert.New(servingcert.Config{
		Namespace:       o.Namespace,
		SecretName:      cfg.Names.ServingCertificateSecret(),
		ServiceName:     cfg.Names.APIService,
		SecretLabels:    cfg.Labels,
		APIServiceNames: []string{scheme.ClientSecretGV.Version + "." + scheme.ClientSecretGV.Group},
	}, kubeClient, aggregator)
	if err != nil {
		return nil, err
	}
	bind := net.ParseIP(o.BindAddress)
	if bind == nil {
		return nil, fmt.Errorf("--bind-address: %q is not an IP address", o.BindAddress)
	}
	generic, err := aggregatedapi.RecommendedConfig(aggregatedapi.Options{
		BindAddress:             bind,
		Port:                    int(*cfg.AggregatedAPIServerPort),
		Kubeconfig:              o.Kubeconfig,
		DisableAdmissionPlugins: cfg.AggregatedAPIServerDisableAdmissionPlugins,
		Title:                   "Pinniped Supervisor",
		Scheme:                  scheme.Scheme,
		Codecs:                  scheme.Codecs,
		Versions:                []schema.GroupVersion{scheme.ClientSecretGV},
		Cert:                    serving.Provider(),
	})
	if err != nil {
		return nil, err
	}
	completed, err := (&apiserver.Config{GenericConfig: generic, ExtraConfig: apiserver.ExtraConfig{
		Scheme: scheme,
		ClientSecrets: oidcclientsecretrequest.Config{
			Namespace:   o.Namespace,
			OIDCClients: supervisorClient.ConfigV1alpha1().OIDCClients(o.Namespace),
			Store:       &clientsecrets.Store{Secrets: kubeClient.CoreV1().Secrets(o.Namespace), Labels: cfg.Labels},
		},
	}}).Complete()
	if err != nil {
		return nil, err
	}
	server, err := completed.New()
	if err != nil {
		return nil, err
	}
	return &aggregatedAPI{server: server, serving: serving}, nil
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
