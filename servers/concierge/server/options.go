package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	conciergeinformers "sealion.dev/core/generated/concierge/informers/externalversions"
	"sealion.dev/core/groupsuffix"
	"sealion.dev/core/servingcert"
	"sealion.dev/servers/concierge/apiserver"
	"sealion.dev/servers/concierge/config"
	"sealion.dev/servers/internal/aggregatedapi"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/internal/leaderelection"
	"sealion.dev/servers/internal/serverboot"
)

// Options are the command-line flags. Everything else is in the configuration file.
type Options struct {
	ConfigFile string
	Kubeconfig string
	Namespace  string
	PodName    string
	// DeploymentName names the Lease through which the Deployment's replicas elect the one
	// whose controllers write.
	DeploymentName string
	BindAddress    string
}

// NewOptions returns the flags' defaults: the pod's namespace and name come from the environment
// the Deployment sets, so that the install needs no flags besides --config.
func NewOptions() *Options {
	return &Options{
		ConfigFile:     "/etc/config/pinniped.yaml",
		Namespace:      os.Getenv("POD_NAMESPACE"),
		PodName:        os.Getenv("POD_NAME"),
		DeploymentName: "pinniped-concierge",
		BindAddress:    "0.0.0.0",
	}
}

// AddFlags adds the flags to fs, with the current values as their defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ConfigFile, "config", o.ConfigFile, "path to the configuration file")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig for running outside a cluster (in-cluster config otherwise)")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace the Concierge runs in (default $POD_NAMESPACE)")
	fs.StringVar(&o.PodName, "pod-name", o.PodName, "the Concierge's own pod, whose image the kube cert agent runs by default and whose name identifies it in leader election (default $POD_NAME, else the host name)")
	fs.StringVar(&o.DeploymentName, "deployment-name", o.DeploymentName, "the Concierge's Deployment, whose replicas elect a leader through a Lease of this name in --namespace")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "address the aggregated API listens on")
}

// Validate reports every invalid flag at once, before anything is read.
func (o *Options) Validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("the Concierge's namespace is unknown: set --namespace or POD_NAMESPACE"))
	}
	if o.DeploymentName == "" {
		errs = append(errs, errors.New("--deployment-name must not be empty: it names the leader election's Lease"))
	}
	// The generic API server listens on an IP only; a host name would fail later, obscurely.
	if net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address: %q is not an IP address", o.BindAddress))
	}
	return errors.Join(errs...)
}

// Config reads the configuration file, switches logging to its level, and builds the clients,
// informer factories and aggregated API configuration the Concierge needs. It starts nothing.
func (o *Options) Config() (*Config, error) {
	file, err := config.Load(o.ConfigFile)
	if err != nil {
		return nil, err
	}
	if err := serverboot.SetUpLogging(file.Log.Level); err != nil {
		return nil, err
	}
	restConfig, err := serverboot.KubeRESTConfig(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	elector, err := leaderelection.ForPod(restConfig, o.Namespace, o.DeploymentName, o.PodName)
	if err != nil {
		return nil, err
	}
	auditKey, err := loadTokenFingerprintKey(restConfig, o.Namespace, audit.TokenFingerprintKeySecretName(file.Audit.TokenFingerprintKeySecret, o.DeploymentName), file.Labels)
	if err != nil {
		return nil, err
	}
	// Everything else the Concierge writes, its controllers write: only the leader's clients do.
	// The impersonation proxy requests its ServiceAccount's tokens with restConfig itself.
	controllerConfig := elector.Wrap(restConfig)
	kubeClient, err := kubernetes.NewForConfig(controllerConfig)
	if err != nil {
		return nil, err
	}
	aggregator, err := aggregatorclient.NewForConfig(controllerConfig)
	if err != nil {
		return nil, err
	}
	conciergeConfig := rest.CopyConfig(controllerConfig)
	conciergeConfig.Wrap(groupsuffix.Transport(*file.APIGroupSuffix))
	conciergeClient, err := conciergeclientset.NewForConfig(conciergeConfig)
	if err != nil {
		return nil, err
	}
	scheme, err := apiserver.NewScheme(*file.APIGroupSuffix)
	if err != nil {
		return nil, err
	}
	serving, err := servingCertificate(o.Namespace, file, scheme, kubeClient, aggregator)
	if err != nil {
		return nil, err
	}
	tracer, err := serverboot.NewTracer(context.Background(), file.Tracing, "pinniped-concierge")
	if err != nil {
		return nil, err
	}
	generic, err := aggregatedapi.RecommendedConfig(aggregatedapi.Options{
		BindAddress:             net.ParseIP(o.BindAddress),
		Port:                    int(*file.AggregatedAPIServerPort),
		Kubeconfig:              o.Kubeconfig,
		DisableAdmissionPlugins: file.AggregatedAPIServerDisableAdmissionPlugins,
		Discovery:               kubeClient.Discovery(),
		Title:                   "Pinniped Concierge",
		Scheme:                  scheme.Scheme,
		Codecs:                  scheme.Codecs,
		Versions:                []schema.GroupVersion{scheme.LoginGV, scheme.IdentityGV},
		Cert:                    serving.Provider(),
		TLS:                     file.TLSProfile,
		Tracer:                  tracer.Provider(),
	})
	if err != nil {
		return nil, err
	}
	return &Config{
		File:            file,
		Namespace:       o.Namespace,
		PodName:         o.PodName,
		BindAddress:     o.BindAddress,
		RESTConfig:      restConfig,
		Elector:         elector,
		KubeClient:      kubeClient,
		ConciergeClient: conciergeClient,
		// The Concierge's own namespace is the only place it reads Secrets and ConfigMaps from.
		NamespaceInformers:       kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0, kubeinformers.WithNamespace(o.Namespace)),
		CRInformers:              conciergeinformers.NewSharedInformerFactory(conciergeClient, 0),
		Scheme:                   scheme,
		Serving:                  serving,
		APIServer:                generic,
		AuditTokenFingerprintKey: auditKey,
		Tracer:                   tracer,
	}, nil
}

// tokenFingerprintKeyTimeout bounds the wait for the audit key's Secret at start-up.
const tokenFingerprintKeyTimeout = 2 * time.Minute

// loadTokenFingerprintKey reads (or, the first replica, creates) the key of the audit events'
// token fingerprints: any replica may, before the leader is elected, so with restConfig itself.
func loadTokenFingerprintKey(restConfig *rest.Config, namespace, name string, labels map[string]string) ([]byte, error) {
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), tokenFingerprintKeyTimeout)
	defer cancel()
	return audit.LoadTokenFingerprintKey(ctx, client.CoreV1().Secrets(namespace), name, labels)
}

// servingCertificate builds the controller of the aggregated API's serving certificate, which
// also keeps the APIServices' caBundle current.
func servingCertificate(namespace string, file *config.Config, scheme *apiserver.Scheme, kubeClient kubernetes.Interface,
	aggregator aggregatorclient.Interface,
) (*servingcert.Controller, error) {
	// The configuration names the certificate age at which to renew, as Pinniped's does.
	duration := time.Duration(*file.API.ServingCertificate.DurationSeconds) * time.Second
	renewAtAge := time.Duration(*file.API.ServingCertificate.RenewBeforeSeconds) * time.Second
	return servingcert.New(servingcert.Config{
		Namespace:    namespace,
		SecretName:   file.Names.ServingCertificateSecret,
		ServiceName:  file.Names.APIService,
		SecretLabels: file.Labels,
		APIServiceNames: []string{
			scheme.LoginGV.Version + "." + scheme.LoginGV.Group,
			scheme.IdentityGV.Version + "." + scheme.IdentityGV.Group,
		},
		Duration:    duration,
		RenewBefore: duration - renewAtAge,
	}, kubeClient, aggregator)
}
