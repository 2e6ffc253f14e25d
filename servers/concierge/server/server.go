// Package server runs the Concierge: it reads the configuration, builds clients and informers,
// starts the controllers and the aggregated API server, and stops everything when the context ends.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	_ "k8s.io/component-base/logs/json/register" // the JSON log format
	"k8s.io/klog/v2"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	conciergeinformers "sealion.dev/core/generated/concierge/informers/externalversions"
	"sealion.dev/core/groupsuffix"
	"sealion.dev/core/servingcert"
	"sealion.dev/servers/concierge/apiserver"
	"sealion.dev/servers/concierge/config"
	"sealion.dev/servers/concierge/internal/authncache"
	"sealion.dev/servers/concierge/internal/controllers/authenticator"
	"sealion.dev/servers/concierge/internal/controllers/impersonationproxy"
	"sealion.dev/servers/concierge/internal/controllers/kubecertagent"
	"sealion.dev/servers/concierge/internal/credential"
	"sealion.dev/servers/concierge/internal/credentialissuer"
	"sealion.dev/servers/concierge/internal/dynamicca"
	"sealion.dev/servers/concierge/internal/impersonator"
	"sealion.dev/servers/internal/aggregatedapi"
	"sealion.dev/servers/internal/serverboot"
)

// Options are the command-line flags. Everything else is in the configuration file.
type Options struct {
	ConfigFile  string
	Kubeconfig  string
	Namespace   string
	PodName     string
	BindAddress string
}

// NewCommand returns the pinniped-concierge command.
func NewCommand(ctx context.Context) *cobra.Command {
	o := &Options{Namespace: os.Getenv("POD_NAMESPACE"), PodName: os.Getenv("POD_NAME"), BindAddress: "0.0.0.0"}
	cmd := &cobra.Command{
		Use:          "pinniped-concierge",
		Short:        "Exchange external credentials for short-lived cluster credentials",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return Run(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ConfigFile, "config", "/etc/config/pinniped.yaml", "path to the configuration file")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig for running outside a cluster (in-cluster config otherwise)")
	f.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace the Concierge runs in (default $POD_NAMESPACE)")
	f.StringVar(&o.PodName, "pod-name", o.PodName, "the Concierge's own pod, whose image the kube cert agent runs by default (default $POD_NAME)")
	f.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "address the aggregated API listens on")
	return cmd
}

// Run starts the Concierge and blocks until ctx ends or the API server fails.
func Run(ctx context.Context, o *Options) error {
	cfg, err := config.Load(o.ConfigFile)
	if err != nil {
		return err
	}
	if err := serverboot.SetUpLogging(cfg.Log.Level); err != nil {
		return err
	}
	if o.Namespace == "" {
		return errors.New("the Concierge's namespace is unknown: set --namespace or POD_NAMESPACE")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := klog.FromContext(ctx)
	suffix := *cfg.APIGroupSuffix

	restConfig, err := serverboot.KubeRESTConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	kubeClient, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	aggregator, err := aggregatorclient.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	conciergeConfig := rest.CopyConfig(restConfig)
	conciergeConfig.Wrap(groupsuffix.Transport(suffix))
	conciergeClient, err := conciergeclientset.NewForConfig(conciergeConfig)
	if err != nil {
		return err
	}

	// The Concierge's own namespace is the only place it reads Secrets and ConfigMaps from.
	nsInformers := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0, kubeinformers.WithNamespace(o.Namespace))
	crInformers := conciergeinformers.NewSharedInformerFactory(conciergeClient, 0)

	signer := dynamicca.New("token credential request signer")
	var startInformers []func(<-chan struct{})
	var controllers []interface{ Run(context.Context) }
	if s := cfg.Signer; s != nil {
		go signer.WatchFiles(ctx, s.CertificateFile, s.PrivateKeyFile, 2*time.Second)
	} else {
		start, agent := kubeCertAgent(o, cfg, restConfig, kubeClient, conciergeClient, nsInformers, crInformers, signer)
		startInformers = append(startInformers, start)
		controllers = append(controllers, agent)
	}
	var authenticators authncache.Cache
	credential.RegisterMetrics()
	// The cluster's signing key when there is one; else the impersonation proxy's signer, whose
	// certificates only the proxy accepts.
	proxySigner := dynamicca.New("impersonation proxy signer")
	exchanger := &credential.Exchanger{Authenticators: &authenticators, Issuer: dynamicca.FirstLoaded{signer, proxySigner}}
	proxy, err := impersonationProxy(ctx, o, cfg, restConfig, kubeClient, conciergeClient, nsInformers, crInformers, signer, proxySigner, exchanger)
	if err != nil {
		return err
	}
	controllers = append(controllers, proxy)

	authGroup, _ := groupsuffix.Replace(authv1alpha1.GroupName, suffix)
	shared := authenticator.Shared{
		APIGroup: authGroup, Namespace: o.Namespace, Cache: &authenticators,
		Secrets: nsInformers.Core().V1().Secrets(), ConfigMaps: nsInformers.Core().V1().ConfigMaps(),
	}
	authInformers := crInformers.Authentication().V1alpha1()
	controllers = append(controllers,
		authenticator.NewJWT(shared, conciergeClient, authInformers.JWTAuthenticators()),
		authenticator.NewWebhook(shared, conciergeClient, authInformers.WebhookAuthenticators()),
	)

	scheme, err := apiserver.NewScheme(suffix)
	if err != nil {
		return err
	}
	// The configuration names the certificate age at which to renew, as Pinniped's does.
	duration := time.Duration(*cfg.API.ServingCertificate.DurationSeconds) * time.Second
	renewAtAge := time.Duration(*cfg.API.ServingCertificate.RenewBeforeSeconds) * time.Second
	serving, err := servingcert.New(servingcert.Config{
		Namespace:    o.Namespace,
		SecretName:   cfg.Names.ServingCertificateSecret,
		ServiceName:  cfg.Names.APIService,
		SecretLabels: cfg.Labels,
		APIServiceNames: []string{
			scheme.LoginGV.Version + "." + scheme.LoginGV.Group,
			scheme.IdentityGV.Version + "." + scheme.IdentityGV.Group,
		},
		Duration:    duration,
		RenewBefore: duration - renewAtAge,
	}, kubeClient, aggregator)
	if err != nil {
		return err
	}

	genericConfig, err := genericServerConfig(o, cfg, scheme, serving)
	if err != nil {
		return err
	}
	completed, err := (&apiserver.Config{
		GenericConfig: genericConfig,
		ExtraConfig:   apiserver.ExtraConfig{Scheme: scheme, Exchanger: exchanger},
	}).Complete()
	if err != nil {
		return err
	}
	server, err := completed.New()
	if err != nil {
		return err
	}

	go func() {
		if err := serving.Run(ctx); err != nil {
			logger.Error(err, "serving certificate controller stopped")
			cancel()
		}
	}()
	nsInformers.Start(ctx.Done())
	crInformers.Start(ctx.Done())
	for _, start := range startInformers {
		start(ctx.Done())
	}
	for _, c := range controllers {
		go c.Run(ctx)
	}
	// The generic server refuses to start without a certificate, so wait for the first one.
	select {
	case <-serving.Provider().Ready():
	case <-ctx.Done():
		return ctx.Err()
	}
	logger.Info("starting the Concierge", "apiGroupSuffix", suffix, "port", *cfg.AggregatedAPIServerPort)
	return server.PrepareRun().RunWithContext(ctx)
}

// defaultCredentialIssuerSpec is the spec of the CredentialIssuer the Concierge creates when the
// install's is missing: the install's.
var defaultCredentialIssuerSpec = configv1alpha1.CredentialIssuerSpec{
	ImpersonationProxy: &configv1alpha1.ImpersonationProxySpec{
		Mode: configv1alpha1.ImpersonationProxyModeAuto,
		Service: configv1alpha1.ImpersonationProxyServiceSpec{
			Type:        configv1alpha1.ImpersonationProxyServiceTypeLoadBalancer,
			Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-connection-idle-timeout": "4000"},
		},
	},
}

// conciergePodSelector selects the Concierge's own pods (see deploy/04-deployment.yaml).
var conciergePodSelector = map[string]string{"deployment.pinniped.dev": "concierge"}

// impersonationProxy builds the proxy and the controller that runs it. Client certificates are
// accepted from the cluster's client CA and from both signers the exchanger issues with.
func impersonationProxy(ctx context.Context, o *Options, cfg *config.Config, restConfig *rest.Config, kubeClient kubernetes.Interface,
	conciergeClient conciergeclientset.Interface, nsInformers kubeinformers.SharedInformerFactory,
	crInformers conciergeinformers.SharedInformerFactory, clusterSigner, proxySigner *dynamicca.Signer, exchanger *credential.Exchanger,
) (*impersonationproxy.Controller, error) {
	clusterClientCA, err := dynamiccertificates.NewDynamicCAFromConfigMapController("client-ca", metav1.NamespaceSystem,
		"extension-apiserver-authentication", "client-ca-file", kubeClient)
	if err != nil {
		return nil, fmt.Errorf("impersonation proxy: watching the cluster's client CA: %w", err)
	}
	go clusterClientCA.Run(ctx, 1)
	authn, err := impersonator.DelegatedAuthenticator(kubeClient, clusterClientCA,
		impersonator.CAContent("impersonation proxy signer", proxySigner),
		impersonator.CAContent("token credential request signer", clusterSigner))
	if err != nil {
		return nil, err
	}
	authz, err := impersonator.DelegatedAuthorizer(kubeClient)
	if err != nil {
		return nil, err
	}
	loginGroup, _ := groupsuffix.Replace(loginv1alpha1.GroupName, *cfg.APIGroupSuffix) // a pinniped.dev group always has one
	handler, err := impersonator.New(impersonator.Config{
		APIServer:                  restConfig,
		Authenticator:              authn,
		Authorizer:                 authz,
		TokenCredentialRequests:    impersonator.TokenCredentialRequestHandler(loginGroup, exchanger),
		TokenCredentialRequestPath: impersonator.TokenCredentialRequestPath(loginGroup),
	})
	if err != nil {
		return nil, err
	}
	ciInformer := crInformers.Config().V1alpha1().CredentialIssuers()
	port := *cfg.ImpersonationProxyServerPort
	return impersonationproxy.New(impersonationproxy.Config{
		Namespace:               o.Namespace,
		CredentialIssuerName:    cfg.Names.CredentialIssuer,
		DefaultSpec:             *defaultCredentialIssuerSpec.ImpersonationProxy,
		LoadBalancerServiceName: cfg.Names.ImpersonationLoadBalancerService,
		ClusterIPServiceName:    cfg.Names.ImpersonationClusterIPService,
		SignerSecretName:        cfg.Names.ImpersonationSignerSecret,
		ServingCASecretName:     cfg.Names.ImpersonationCACertificateSecret,
		ServingCertSecretName:   cfg.Names.ImpersonationTLSCertificateSecret,
		Selector:                conciergePodSelector,
		Labels:                  cfg.Labels,
		Address:                 net.JoinHostPort(o.BindAddress, strconv.FormatInt(port, 10)),
		Port:                    int32(port),
	}, kubeClient, impersonationproxy.Informers{
		CredentialIssuers: ciInformer,
		Services:          nsInformers.Core().V1().Services(),
		Secrets:           nsInformers.Core().V1().Secrets(),
	}, handler, proxySigner, &credentialissuer.Updater{
		Client: conciergeClient,
		Lister: ciInformer.Lister(),
		Name:   cfg.Names.CredentialIssuer,
		Labels: cfg.Labels,
		Spec:   defaultCredentialIssuerSpec,
	}), nil
}

// kubeCertAgent builds the controller that feeds signer with the cluster signing key, and returns
// a function that starts the informers it needs besides nsInformers and crInformers.
func kubeCertAgent(o *Options, cfg *config.Config, restConfig *rest.Config, kubeClient kubernetes.Interface,
	conciergeClient conciergeclientset.Interface, nsInformers kubeinformers.SharedInformerFactory,
	crInformers conciergeinformers.SharedInformerFactory, signer *dynamicca.Signer,
) (func(<-chan struct{}), *kubecertagent.Controller) {
	// Only kube-controller-manager pods are watched in kube-system.
	kubeSystem := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0,
		kubeinformers.WithNamespace(kubecertagent.ControllerManagerNamespace),
		kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = kubecertagent.ControllerManagerLabel }))
	cluster := kubeinformers.NewSharedInformerFactory(kubeClient, 0)
	informers := kubecertagent.Informers{
		ControllerManagerPods: kubeSystem.Core().V1().Pods(),
		Nodes:                 cluster.Core().V1().Nodes(),
		Pods:                  nsInformers.Core().V1().Pods(),
		Deployments:           nsInformers.Apps().V1().Deployments(),
		CredentialIssuers:     crInformers.Config().V1alpha1().CredentialIssuers(),
	}
	agent := kubecertagent.New(kubecertagent.Config{
		Namespace:          o.Namespace,
		DeploymentName:     cfg.AgentDeploymentName(),
		ServiceAccountName: cfg.Names.AgentServiceAccount,
		Image:              cfg.KubeCertAgent.Image,
		OwnPodName:         o.PodName,
		ImagePullSecrets:   cfg.KubeCertAgent.ImagePullSecrets,
		PriorityClassName:  cfg.KubeCertAgent.PriorityClassName,
		Labels:             cfg.Labels,
	}, kubeClient, informers,
		&kubecertagent.PodExecutor{Config: restConfig, Client: kubeClient},
		signer,
		&credentialissuer.Updater{
			Client: conciergeClient,
			Lister: informers.CredentialIssuers.Lister(),
			Name:   cfg.Names.CredentialIssuer,
			Labels: cfg.Labels,
			Spec:   defaultCredentialIssuerSpec,
		})
	return func(stop <-chan struct{}) {
		kubeSystem.Start(stop)
		cluster.Start(stop)
	}, agent
}

// genericServerConfig builds the generic API server config: delegated authentication and
// authorization to the cluster, admission, and TLS from the serving certificate manager.
func genericServerConfig(o *Options, cfg *config.Config, scheme *apiserver.Scheme, serving *servingcert.Controller) (*genericapiserver.RecommendedConfig, error) {
	return aggregatedapi.RecommendedConfig(aggregatedapi.Options{
		BindAddress:             net.ParseIP(o.BindAddress),
		Port:                    int(*cfg.AggregatedAPIServerPort),
		Kubeconfig:              o.Kubeconfig,
		DisableAdmissionPlugins: cfg.AggregatedAPIServerDisableAdmissionPlugins,
		Title:                   "Pinniped Concierge",
		Scheme:                  scheme.Scheme,
		Codecs:                  scheme.Codecs,
		Versions:                []schema.GroupVersion{scheme.LoginGV, scheme.IdentityGV},
		Cert:                    serving.Provider(),
	})
}
