// Package server runs the Supervisor in the stages of k8s.io/apiserver's own servers: Options
// (the flags) -> Config (the configuration file, clients, informer factories and aggregated API
// configuration read and built from them) -> CompletedConfig (defaults filled in) -> New (the
// FederationDomain, upstream identity provider and OIDCClient controllers, the session garbage
// collector, every FederationDomain's endpoints on the configured listeners and the
// OIDCClientSecretRequest aggregated API server, constructed) -> Run (all of them started, until
// the context ends). Each stage can be tested without the ones after it.
//
// The endpoints (discovery, JWKS and the OAuth endpoints, whose clients are pinniped-cli and the
// OIDCClients) are served with the TLS certificate chosen by SNI; the aggregated API with a
// certificate the Supervisor manages itself.
package server

import (
	"context"

	"github.com/spf13/cobra"
	_ "k8s.io/component-base/logs/json/register" // the JSON log format
	"k8s.io/klog/v2"

	"sealion.dev/servers/internal/fairqueue"
	"sealion.dev/servers/internal/leaderelection"
	"sealion.dev/servers/internal/serverboot"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/kinds"
	"sealion.dev/servers/supervisor/internal/controllers/federationdomain"
	oidcclientcontroller "sealion.dev/servers/supervisor/internal/controllers/oidcclient"
	"sealion.dev/servers/supervisor/internal/controllers/sessionkeys"
	"sealion.dev/servers/supervisor/internal/controllers/sessionrevocation"
	"sealion.dev/servers/supervisor/internal/controllers/upstreamidp"
	"sealion.dev/servers/supervisor/internal/discovery"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
	"sealion.dev/servers/supervisor/internal/oauth/token"
	"sealion.dev/servers/supervisor/internal/sni"
	"sealion.dev/servers/supervisor/internal/tokenseal"
)

// NewCommand returns the pinniped-supervisor command.
func NewCommand(ctx context.Context) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:          "pinniped-supervisor",
		Short:        "Serve OIDC issuers that federate upstream identity providers",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			c, err := o.Config()
			if err != nil {
				return err
			}
			s, err := c.Complete().New()
			if err != nil {
				return err
			}
			return s.Run(ctx)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// Server is the Supervisor, constructed and not yet running.
type Server struct {
	// elector elects the replica whose controllers and garbage collector write.
	elector   *leaderelection.Elector
	informers []informerFactory
	// runners are the controllers, the session garbage collector and the access token cache.
	runners   []runner
	api       *aggregatedAPI
	listeners []*listener
	// tracer exports the last spans once everything has stopped.
	tracer *serverboot.Tracer
	// suffix, namespace and apiPort are logged when the server starts.
	suffix, namespace string
	apiPort           int64
}

// informerFactory starts the informers asked of it so far.
type informerFactory interface{ Start(stopCh <-chan struct{}) }

// runner works until its context ends, as every controller does.
type runner interface{ Run(ctx context.Context) }

// runFunc makes a function a runner.
type runFunc func(ctx context.Context)

func (f runFunc) Run(ctx context.Context) { f(ctx) }

// New constructs the controllers, the endpoints and the aggregated API server, and opens the
// endpoints' listeners; it serves nothing yet.
func (c CompletedConfig) New() (*Server, error) {
	idps := c.CRInformers.Idp().V1alpha1()
	secrets := c.KubeInformers.Core().V1().Secrets()
	certs, err := sni.New()
	if err != nil {
		return nil, err
	}
	// OAuth state lives in Secrets of the namespace; the endpoints find the upstreams the
	// upstreamidp controller keeps in the registry at each request, and report to it those they
	// found unreachable.
	registry := &connectors.Registry{}
	// The sessions' upstream tokens are sealed with keys the sessionkeys controller keeps in a
	// Secret; a replaced key opens what it sealed as long as a session record can live.
	sealKeys := tokenseal.NewRing()
	storage := sessions.NewStorage(c.KubeClient.CoreV1().Secrets(c.Namespace), registry, sealKeys).WithAudit(c.audit)
	sessionKeys := sessionkeys.New(sessionkeys.Config{
		Namespace:   c.Namespace,
		Labels:      c.File.Labels,
		RetireAfter: sessions.MaxRecordLifetime,
	}, c.Controllers.Kube, secrets, sealKeys)
	// OIDCClients are looked up in the informer caches at each request.
	oidcClients := c.CRInformers.Config().V1alpha1().OIDCClients()
	// SessionRevocations too, so that every replica refuses the sessions they end at once.
	sessionRevocations := c.CRInformers.Config().V1alpha1().SessionRevocations()
	federationdomain.RegisterMetrics()
	token.RegisterMetrics()
	sessions.RegisterMetrics()
	connectors.RegisterMetrics()
	fairqueue.RegisterMetrics()
	endpoints := oauth.New(storage, registry).WithClients(&provider.OIDCClients{
		Clients:       oidcClients.Lister().OIDCClients(c.Namespace),
		Secrets:       secrets.Lister().Secrets(c.Namespace),
		MinBcryptCost: clientsecrets.BcryptCost,
	}).WithRevocations(sessionRevocations.Lister().SessionRevocations(c.Namespace)).
		WithReservedNameExceptions(c.File.AllowedReservedNames).WithAudit(c.audit)
	issuers := issuer.NewMux(discovery.Endpoints{}, endpoints)
	federationDomains, err := federationdomain.New(federationdomain.Config{
		Namespace:                   c.Namespace,
		APIGroupSuffix:              *c.File.APIGroupSuffix,
		DefaultTLSCertificateSecret: c.File.Names.DefaultTLSCertificateSecret,
		Labels:                      c.File.Labels,
		DeploymentName:              c.DeploymentName,
	}, c.Controllers.Supervisor, c.Controllers.Kube, kinds.All, federationdomain.Informers{
		FederationDomains: c.CRInformers.Config().V1alpha1().FederationDomains(),
		IDPs:              idps,
		Secrets:           secrets,
	}, issuers, certs)
	if err != nil {
		return nil, err
	}
	upstreamIDPs := upstreamidp.New(upstreamidp.Config{
		Namespace: c.Namespace,
		Labels:    c.File.Labels,
		Settings: connectors.Settings{
			TLSProfile:            c.File.TLSProfile,
			IgnoreUserInfoIssuers: c.File.OIDC.IgnoreUserInfoEndpoint.WhenIssuerExactlyMatches,
			ConnectTimeout:        c.File.Upstreams.ConnectTimeout(),
		},
	}, upstreamidp.Clients{Supervisor: c.Controllers.Supervisor, Kube: c.Controllers.Kube}, kinds.All, upstreamidp.Informers{
		IDPs:       idps,
		Secrets:    secrets,
		ConfigMaps: c.KubeInformers.Core().V1().ConfigMaps(),
	}, registry)
	clients := oidcclientcontroller.New(c.Namespace, c.Controllers.Supervisor, oidcclientcontroller.Informers{
		OIDCClients: oidcClients,
		Secrets:     secrets,
	}, clientsecrets.BcryptCost)
	revocationController := sessionrevocation.New(sessionrevocation.Config{
		Namespace:  c.Namespace,
		Supervisor: c.Controllers.Supervisor,
		Sessions:   storage,
		Leading:    c.Elector.IsLeader,
		Audit:      c.audit,
	}, sessionrevocation.Informers{
		SessionRevocations: sessionRevocations,
		FederationDomains:  c.CRInformers.Config().V1alpha1().FederationDomains(),
	})
	api, err := c.newAggregatedAPI()
	if err != nil {
		return nil, err
	}
	ready := &readiness{loaders: []loader{
		{"the FederationDomain controller", federationDomains.Synced},
		{"the upstream identity provider controller", upstreamIDPs.Synced},
		{"the OIDCClient controller", clients.Synced},
		{"the SessionRevocation controller", revocationController.Synced},
		{"the session key controller", sessionKeys.Synced},
	}}
	// Last, so that no listener stays open when something else fails.
	listeners, err := c.listen(issuers, certs.GetCertificate, ready)
	if err != nil {
		return nil, err
	}
	return &Server{
		informers: []informerFactory{c.KubeInformers, c.CRInformers},
		elector:   c.Elector,
		runners: []runner{federationDomains, upstreamIDPs, clients, revocationController, sessionKeys, runFunc(func(ctx context.Context) {
			storage.RunGarbageCollector(ctx, c.Elector.IsLeader)
		}), runFunc(storage.WatchAccessTokens)},
		api:       api,
		listeners: listeners,
		tracer:    c.Tracer,
		suffix:    *c.File.APIGroupSuffix,
		namespace: c.Namespace,
		apiPort:   *c.File.AggregatedAPIServerPort,
	}, nil
}

// Run starts the Supervisor and blocks until ctx ends or a listener or the aggregated API fails;
// it then waits for the listeners to finish their in-flight requests.
func (s *Server) Run(ctx context.Context) error {
	defer s.tracer.Flush(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The controllers write once this replica leads; on the way out it hands the Lease over.
	elected := make(chan struct{})
	go func() { defer close(elected); s.elector.Run(ctx) }()
	defer func() { cancel(); <-elected }()
	for _, f := range s.informers {
		f.Start(ctx.Done())
	}
	for _, r := range s.runners {
		go r.Run(ctx)
	}
	// The aggregated API and each listener send their outcome to errc once they stop.
	running := 1 + len(s.listeners)
	errc := make(chan error, running)
	s.api.start(ctx, errc)
	for _, l := range s.listeners {
		l.serve(ctx, errc)
	}
	klog.FromContext(ctx).Info("starting the Supervisor", "apiGroupSuffix", s.suffix, "namespace", s.namespace, "aggregatedAPIServerPort", s.apiPort)

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		running--
		cancel()
	}
	for ; running > 0; running-- {
		if e := <-errc; e != nil && err == nil {
			err = e
		}
	}
	return err
}
