// Package server runs the Concierge in the stages of k8s.io/apiserver's own servers: Options (the
// flags) -> Config (the configuration file, clients, informer factories and aggregated API
// configuration read and built from them) -> CompletedConfig (defaults filled in) -> New (the
// controllers, the impersonation proxy and the aggregated API server, constructed) -> Run (all of
// them started, until the context ends). Each stage can be tested without the ones after it.
package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	_ "k8s.io/component-base/logs/json/register" // the JSON log format
	"k8s.io/klog/v2"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	"sealion.dev/core/groupsuffix"
	"sealion.dev/core/servingcert"
	"sealion.dev/servers/concierge/apiserver"
	"sealion.dev/servers/concierge/internal/authenticator/authnmetrics"
	"sealion.dev/servers/concierge/internal/authncache"
	"sealion.dev/servers/concierge/internal/controllers/authenticator"
	"sealion.dev/servers/concierge/internal/credential"
	"sealion.dev/servers/concierge/internal/dynamicca"
	"sealion.dev/servers/concierge/internal/impersonator"
	"sealion.dev/servers/concierge/internal/statemetrics"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/internal/fairqueue"
	"sealion.dev/servers/internal/leaderelection"
	"sealion.dev/servers/internal/serverboot"
)

// NewCommand returns the pinniped-concierge command.
func NewCommand(ctx context.Context) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:          "pinniped-concierge",
		Short:        "Exchange external credentials for short-lived cluster credentials",
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

// Server is the Concierge, constructed and not yet running.
type Server struct {
	// elector elects the replica whose controllers write.
	elector   *leaderelection.Elector
	informers []informerFactory
	// runners are the controllers and the watchers of CA sources.
	runners []runner
	serving *servingcert.Controller
	api     *genericapiserver.GenericAPIServer
	// suffix and port are logged when the server starts.
	suffix string
	port   int64
	// tracer exports the last spans once everything has stopped.
	tracer *serverboot.Tracer
}

// informerFactory starts the informers asked of it so far.
type informerFactory interface{ Start(stopCh <-chan struct{}) }

// runner works until its context ends, as every controller does.
type runner interface{ Run(ctx context.Context) }

// runFunc makes a function a runner.
type runFunc func(ctx context.Context)

func (f runFunc) Run(ctx context.Context) { f(ctx) }

// New constructs the controllers, the impersonation proxy and the aggregated API server. The
// token credential request signer is fed from the configured files, or else by the kube cert agent.
func (c CompletedConfig) New() (*Server, error) {
	s := &Server{
		elector:   c.Elector,
		informers: []informerFactory{c.NamespaceInformers, c.CRInformers},
		serving:   c.Serving,
		suffix:    *c.File.APIGroupSuffix,
		port:      *c.File.AggregatedAPIServerPort,
		tracer:    c.Tracer,
	}
	// loaders fill what exchanges are served from; the replica is ready once each has tried.
	var loaders []loader
	signer := dynamicca.New("token credential request signer")
	if f := c.File.Signer; f != nil {
		s.runners = append(s.runners, runFunc(func(ctx context.Context) {
			signer.WatchFiles(ctx, f.CertificateFile, f.PrivateKeyFile, c.SignerReloadInterval)
		}))
	} else {
		informers, agent := c.kubeCertAgent(signer)
		s.informers = append(s.informers, informers...)
		s.runners = append(s.runners, agent)
		loaders = append(loaders, loader{"the kube cert agent controller", agent})
	}
	var authenticators authncache.Cache
	authnmetrics.RegisterMetrics()
	credential.RegisterMetrics()
	dynamicca.RegisterMetrics(string(configv1alpha1.StrategyTypeCertificateSigningRequest),
		string(configv1alpha1.StrategyTypeKubeClusterSigningCertificate), string(configv1alpha1.StrategyTypeImpersonationProxy))
	impersonator.RegisterMetrics()
	fairqueue.RegisterMetrics()
	csrs, csrIssuer, err := c.certificateSigningRequests()
	if err != nil {
		return nil, err
	}
	s.runners = append(s.runners, csrs)
	// The cluster's signer while the CertificateSigningRequest strategy works (enabled, or in auto
	// mode where neither of the others serves); else the cluster's signing key, or the configured
	// CA, when there is one; else the impersonation proxy's signer, whose certificates only the
	// proxy accepts. The proxy accepts the first two as well (the cluster's client CA signs both).
	proxySigner := dynamicca.New("impersonation proxy signer")
	exchanger := &credential.Exchanger{
		Authenticators: &authenticators, Reserved: c.File.AllowedReservedNames,
		Issuer: dynamicca.FirstLoaded{
			dynamicca.Measured{Strategy: string(configv1alpha1.StrategyTypeCertificateSigningRequest), Issuer: csrIssuer},
			dynamicca.Measured{Strategy: string(configv1alpha1.StrategyTypeKubeClusterSigningCertificate), Issuer: signer},
			dynamicca.Measured{Strategy: string(configv1alpha1.StrategyTypeImpersonationProxy), Issuer: proxySigner},
		},
		Audit: audit.New(os.Stdout, c.File.Audit.LogUsernamesAndGroups.Enabled()).WithTokenFingerprintKey(c.AuditTokenFingerprintKey),
	}
	proxy, err := c.impersonationProxy(signer, proxySigner, exchanger)
	if err != nil {
		return nil, err
	}
	s.runners = append(s.runners, proxy...)

	authGroup, _ := groupsuffix.Replace(authv1alpha1.GroupName, s.suffix)
	shared := authenticator.Shared{
		APIGroup: authGroup, Namespace: c.Namespace, Cache: &authenticators,
		Secrets: c.NamespaceInformers.Core().V1().Secrets(), ConfigMaps: c.NamespaceInformers.Core().V1().ConfigMaps(),
	}
	authInformers := c.CRInformers.Authentication().V1alpha1()
	statemetrics.Register(&statemetrics.Collector{
		CredentialIssuers:     c.CRInformers.Config().V1alpha1().CredentialIssuers().Lister(),
		CredentialIssuer:      c.File.Names.CredentialIssuer,
		JWTAuthenticators:     authInformers.JWTAuthenticators().Lister(),
		WebhookAuthenticators: authInformers.WebhookAuthenticators().Lister(),
		Signers: map[string]statemetrics.Expiring{
			string(configv1alpha1.StrategyTypeKubeClusterSigningCertificate): signer,
			string(configv1alpha1.StrategyTypeImpersonationProxy):            proxySigner,
		},
	})
	jwts := authenticator.NewJWT(shared, c.ConciergeClient, authInformers.JWTAuthenticators())
	webhooks := authenticator.NewWebhook(shared, c.ConciergeClient, authInformers.WebhookAuthenticators())
	s.runners = append(s.runners, jwts, webhooks)
	loaders = append(loaders, loader{"the JWTAuthenticator controller", jwts}, loader{"the WebhookAuthenticator controller", webhooks})

	api, err := (&apiserver.Config{
		GenericConfig: c.APIServer,
		ExtraConfig:   apiserver.ExtraConfig{Scheme: c.Scheme, Exchanger: exchanger},
	}).Complete()
	if err != nil {
		return nil, err
	}
	if s.api, err = api.New(); err != nil {
		return nil, err
	}
	if err := s.api.AddReadyzChecks(loadedCheck(loaders)); err != nil {
		return nil, err
	}
	return s, nil
}

// loader is a controller that fills what exchanges are served from: the authenticator cache, the
// signer.
type loader struct {
	name       string
	controller interface{ Synced() bool }
}

// loadedCheck fails /readyz until every loader has synced each object once. A replica that
// started serving before would answer the TokenCredentialRequests its Service sends it with
// "authentication failed" for want of the authenticator: found by a fault test that deletes a
// pod under load.
func loadedCheck(loaders []loader) healthz.HealthChecker {
	return healthz.NamedCheck("credentials-loaded", func(*http.Request) error {
		for _, l := range loaders {
			if !l.controller.Synced() {
				return fmt.Errorf("%s has not loaded every object yet", l.name)
			}
		}
		return nil
	})
}

// Run starts the Concierge and blocks until ctx ends or the API server fails, and then until
// the controllers have stopped.
func (s *Server) Run(ctx context.Context) error {
	defer s.tracer.Flush(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := klog.FromContext(ctx)
	// The controllers write once this replica leads; on the way out it hands the Lease over.
	elected := make(chan struct{})
	go func() { defer close(elected); s.elector.Run(ctx) }()
	defer func() { cancel(); <-elected }()
	go func() {
		if err := s.serving.Run(ctx); err != nil {
			logger.Error(err, "serving certificate controller stopped")
			cancel()
		}
	}()
	for _, f := range s.informers {
		f.Start(ctx.Done())
	}
	// The runners stop with ctx; the impersonation proxy's then drains its connections, which
	// the process waits for before it exits.
	var runners sync.WaitGroup
	defer func() { cancel(); runners.Wait() }()
	for _, r := range s.runners {
		runners.Go(func() { r.Run(ctx) })
	}
	// The generic server refuses to start without a certificate, so wait for the first one.
	select {
	case <-s.serving.Provider().Ready():
	case <-ctx.Done():
		return ctx.Err()
	}
	logger.Info("starting the Concierge", "apiGroupSuffix", s.suffix, "port", s.port)
	return s.api.PrepareRun().RunWithContext(ctx)
}
