// Package server runs the Supervisor: it reads the configuration, builds clients and informers,
// starts the FederationDomain, upstream identity provider and OIDCClient controllers and the
// session garbage collector, serves every FederationDomain's endpoints (discovery, JWKS and the
// OAuth endpoints, whose clients are pinniped-cli and the OIDCClients) on the configured listeners
// with the TLS certificate chosen by SNI, and serves the OIDCClientSecretRequest aggregated API
// with a certificate it manages itself, until the context ends.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	_ "k8s.io/component-base/logs/json/register" // the JSON log format
	"k8s.io/klog/v2"

	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	supervisorinformers "sealion.dev/core/generated/supervisor/informers/externalversions"
	"sealion.dev/core/groupsuffix"
	"sealion.dev/servers/internal/serverboot"
	"sealion.dev/servers/supervisor/config"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
	"sealion.dev/servers/supervisor/internal/controllers/federationdomain"
	oidcclientcontroller "sealion.dev/servers/supervisor/internal/controllers/oidcclient"
	"sealion.dev/servers/supervisor/internal/controllers/upstreamidp"
	"sealion.dev/servers/supervisor/internal/discovery"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oidcprovider"
	"sealion.dev/servers/supervisor/internal/sni"
	"sealion.dev/servers/supervisor/internal/upstreams"
)

// Options are the command-line flags. Everything else is in the configuration file.
type Options struct {
	ConfigFile string
	Kubeconfig string
	Namespace  string
	// BindAddress is where the aggregated API listens.
	BindAddress string
}

// NewCommand returns the pinniped-supervisor command.
func NewCommand(ctx context.Context) *cobra.Command {
	o := &Options{Namespace: os.Getenv("POD_NAMESPACE"), BindAddress: "0.0.0.0"}
	cmd := &cobra.Command{
		Use:          "pinniped-supervisor",
		Short:        "Serve OIDC issuers that federate upstream identity providers",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return Run(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ConfigFile, "config", "/etc/config/pinniped.yaml", "path to the configuration file")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig for running outside a cluster (in-cluster config otherwise)")
	f.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace the Supervisor runs in, where its FederationDomains, identity providers and Secrets are (default $POD_NAMESPACE)")
	f.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "address the aggregated API (OIDCClientSecretRequest) listens on")
	return cmd
}

// Run starts the Supervisor and blocks until ctx ends or a listener or the aggregated API fails.
func Run(ctx context.Context, o *Options) error {
	cfg, err := config.Load(o.ConfigFile)
	if err != nil {
		return err
	}
	if err := serverboot.SetUpLogging(cfg.Log.Level); err != nil {
		return err
	}
	if o.Namespace == "" {
		return errors.New("the Supervisor's namespace is unknown: set --namespace or POD_NAMESPACE")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := klog.FromContext(ctx)
	suffix := *cfg.APIGroupSuffix

	restConfig, err := serverboot.KubeRESTConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	// Every login stores its session in Secrets (about 13 requests from authorize to token), so a
	// client-side limit caps logins per second (25 requests/s allowed 1.9 logins/s in make bench).
	// The API server's priority and fairness already bounds what this client may take.
	restConfig.QPS = -1
	kubeClient, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	supervisorConfig := rest.CopyConfig(restConfig)
	supervisorConfig.Wrap(groupsuffix.Transport(suffix))
	supervisorClient, err := supervisorclientset.NewForConfig(supervisorConfig)
	if err != nil {
		return err
	}

	// Everything the Supervisor reads lives in its own namespace.
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0, kubeinformers.WithNamespace(o.Namespace))
	crFactory := supervisorinformers.NewSharedInformerFactoryWithOptions(supervisorClient, 0, supervisorinformers.WithNamespace(o.Namespace))
	idps := crFactory.Idp().V1alpha1()

	certs, err := sni.New()
	if err != nil {
		return err
	}
	// OAuth state lives in Secrets of the namespace; the endpoints find the upstreams the
	// upstreamidp controller made Ready in the registry, at each request.
	storage := oidcprovider.NewStorage(kubeClient.CoreV1().Secrets(o.Namespace))
	registry := &upstreams.Registry{}
	// OIDCClients are looked up in the informer caches at each request.
	oidcClients := crFactory.Config().V1alpha1().OIDCClients()
	endpoints := oidcprovider.New(storage, registry).WithClients(&oidcprovider.OIDCClients{
		Clients:       oidcClients.Lister().OIDCClients(o.Namespace),
		Secrets:       kubeFactory.Core().V1().Secrets().Lister().Secrets(o.Namespace),
		MinBcryptCost: clientsecrets.BcryptCost,
	})
	issuers := issuer.NewMux(discovery.Endpoints{}, endpoints)
	controller, err := federationdomain.New(federationdomain.Config{
		Namespace:                   o.Namespace,
		APIGroupSuffix:              suffix,
		DefaultTLSCertificateSecret: cfg.Names.DefaultTLSCertificateSecret,
		Labels:                      cfg.Labels,
	}, supervisorClient, kubeClient, federationdomain.Informers{
		FederationDomains: crFactory.Config().V1alpha1().FederationDomains(),
		OIDC:              idps.OIDCIdentityProviders(),
		LDAP:              idps.LDAPIdentityProviders(),
		ActiveDirectory:   idps.ActiveDirectoryIdentityProviders(),
		GitHub:            idps.GitHubIdentityProviders(),
		Secrets:           kubeFactory.Core().V1().Secrets(),
	}, issuers, certs)
	if err != nil {
		return err
	}

	upstreamController := upstreamidp.New(o.Namespace, supervisorClient, upstreamidp.Informers{
		OIDC:            idps.OIDCIdentityProviders(),
		LDAP:            idps.LDAPIdentityProviders(),
		ActiveDirectory: idps.ActiveDirectoryIdentityProviders(),
		GitHub:          idps.GitHubIdentityProviders(),
		Secrets:         kubeFactory.Core().V1().Secrets(),
		ConfigMaps:      kubeFactory.Core().V1().ConfigMaps(),
	}, registry)
	clientController := oidcclientcontroller.New(o.Namespace, supervisorClient, oidcclientcontroller.Informers{
		OIDCClients: oidcClients,
		Secrets:     kubeFactory.Core().V1().Secrets(),
	}, clientsecrets.BcryptCost)
	api, err := newAggregatedAPI(o, cfg, restConfig, kubeClient, supervisorClient)
	if err != nil {
		return err
	}

	kubeFactory.Start(ctx.Done())
	crFactory.Start(ctx.Done())
	go controller.Run(ctx)
	go upstreamController.Run(ctx)
	go clientController.Run(ctx)
	go storage.RunGarbageCollector(ctx)

	handler := withHealthz(issuers)
	errc := make(chan error, 3)
	api.start(ctx, errc)
	listening := 1 // the aggregated API, which reports to errc like the listeners
	if e := cfg.Endpoints.HTTPS; e.Enabled() {
		tlsConfig := &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: certs.GetCertificate,
			NextProtos:     []string{"h2", "http/1.1"},
		}
		if err := serve(ctx, "https", e, handler, tlsConfig, errc); err != nil {
			return err
		}
		listening++
	}
	if e := cfg.Endpoints.HTTP; e.Enabled() {
		if err := serve(ctx, "http", e, handler, nil, errc); err != nil {
			return err
		}
		listening++
	}
	logger.Info("starting the Supervisor", "apiGroupSuffix", suffix, "namespace", o.Namespace, "aggregatedAPIServerPort", *cfg.AggregatedAPIServerPort)

	select {
	case <-ctx.Done():
	case err = <-errc:
		listening--
		cancel()
	}
	// Wait for the listeners to finish their in-flight requests.
	for ; listening > 0; listening-- {
		if e := <-errc; e != nil && err == nil {
			err = e
		}
	}
	return err
}

// shutdownTimeout bounds how long in-flight requests may take once the Supervisor stops.
const shutdownTimeout = 10 * time.Second

// serve listens on e and serves handler until ctx ends, then sends the outcome to errc: nil after
// a clean shutdown. With tlsConfig nil it serves plain HTTP.
func serve(ctx context.Context, name string, e *config.Endpoint, handler http.Handler, tlsConfig *tls.Config, errc chan<- error) error {
	ln, err := net.Listen(e.Network, e.Address)
	if err != nil {
		return fmt.Errorf("%s listener: %w", name, err)
	}
	server := &http.Server{
		Handler:           handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	done := make(chan error, 1)
	go func() {
		var err error
		if tlsConfig != nil {
			err = server.ServeTLS(ln, "", "")
		} else {
			err = server.Serve(ln)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	go func() {
		select {
		case err := <-done:
			errc <- fmt.Errorf("%s listener stopped: %w", name, err)
		case <-ctx.Done():
			shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			defer cancel()
			_ = server.Shutdown(shutdownCtx)
			errc <- <-done
		}
	}()
	klog.FromContext(ctx).Info("listening", "listener", name, "network", e.Network, "address", ln.Addr().String())
	return nil
}

// withHealthz answers /healthz on any host, for probes, and passes everything else to next.
func withHealthz(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("ok"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
