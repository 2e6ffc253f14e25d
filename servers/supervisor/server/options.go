package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	supervisorinformers "sealion.dev/core/generated/supervisor/informers/externalversions"
	"sealion.dev/core/groupsuffix"
	"sealion.dev/core/servingcert"
	"sealion.dev/core/tracing"
	"sealion.dev/servers/internal/aggregatedapi"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/internal/leaderelection"
	"sealion.dev/servers/internal/serverboot"
	"sealion.dev/servers/supervisor/apiserver"
	"sealion.dev/servers/supervisor/config"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
)

// Options are the command-line flags. Everything else is in the configuration file.
type Options struct {
	ConfigFile string
	Kubeconfig string
	Namespace  string
	// PodName identifies this replica in leader election; DeploymentName names the Lease through
	// which the Deployment's replicas elect the one whose controllers write.
	PodName, DeploymentName string
	// BindAddress is where the aggregated API listens.
	BindAddress string
}

// NewOptions returns the flags' defaults: the pod's namespace and name come from the environment
// the Deployment sets, so that the install needs no flags besides --config.
func NewOptions() *Options {
	return &Options{
		ConfigFile:     "/etc/config/pinniped.yaml",
		Namespace:      os.Getenv("POD_NAMESPACE"),
		PodName:        os.Getenv("POD_NAME"),
		DeploymentName: "pinniped-supervisor",
		BindAddress:    "0.0.0.0",
	}
}

// AddFlags adds the flags to fs, with the current values as their defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ConfigFile, "config", o.ConfigFile, "path to the configuration file")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig for running outside a cluster (in-cluster config otherwise)")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace the Supervisor runs in, where its FederationDomains, identity providers and Secrets are (default $POD_NAMESPACE)")
	fs.StringVar(&o.PodName, "pod-name", o.PodName, "the Supervisor's own pod, whose name identifies it in leader election (default $POD_NAME, else the host name)")
	fs.StringVar(&o.DeploymentName, "deployment-name", o.DeploymentName, "the Supervisor's Deployment, whose replicas elect a leader through a Lease of this name in --namespace")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "address the aggregated API (OIDCClientSecretRequest) listens on")
}

// Validate reports every invalid flag at once, before anything is read.
func (o *Options) Validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("the Supervisor's namespace is unknown: set --namespace or POD_NAMESPACE"))
	}
	if o.DeploymentName == "" {
		errs = append(errs, errors.New("--deployment-name must not be empty: it names the leader election's Lease"))
	}
	if net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address: %q is not an IP address", o.BindAddress))
	}
	return errors.Join(errs...)
}

// Config reads the configuration file, switches logging to its level, and builds the clients,
// informer factories and aggregated API configuration the Supervisor needs. It starts nothing.
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
	// Within a traced login, the session storage's requests to the API server are spans too.
	servingConfig := rest.CopyConfig(restConfig)
	servingConfig.Wrap(tracing.Transport)
	kubeClient, err := kubernetes.NewForConfig(servingConfig)
	if err != nil {
		return nil, err
	}
	supervisorConfig := rest.CopyConfig(restConfig)
	supervisorConfig.Wrap(groupsuffix.Transport(*file.APIGroupSuffix))
	supervisorClient, err := supervisorclientset.NewForConfig(supervisorConfig)
	if err != nil {
		return nil, err
	}
	elector, err := leaderelection.ForPod(restConfig, o.Namespace, o.DeploymentName, o.PodName)
	if err != nil {
		return nil, err
	}
	// Any replica may create the audit key's Secret, before the leader is elected.
	keyCtx, cancel := context.WithTimeout(context.Background(), tokenFingerprintKeyTimeout)
	defer cancel()
	auditKey, err := audit.LoadTokenFingerprintKey(keyCtx, kubeClient.CoreV1().Secrets(o.Namespace),
		audit.TokenFingerprintKeySecretName(file.Audit.TokenFingerprintKeySecret, o.DeploymentName), file.Labels)
	if err != nil {
		return nil, err
	}
	// The controllers' clients write only while this replica leads; the clients above serve
	// requests (logins, OIDCClientSecretRequests) on every replica.
	controllerConfig := elector.Wrap(restConfig)
	controllerKube, err := kubernetes.NewForConfig(controllerConfig)
	if err != nil {
		return nil, err
	}
	controllerSupervisorConfig := rest.CopyConfig(controllerConfig)
	controllerSupervisorConfig.Wrap(groupsuffix.Transport(*file.APIGroupSuffix))
	controllerSupervisor, err := supervisorclientset.NewForConfig(controllerSupervisorConfig)
	if err != nil {
		return nil, err
	}
	aggregator, err := aggregatorclient.NewForConfig(controllerConfig)
	if err != nil {
		return nil, err
	}
	scheme, err := apiserver.NewScheme(*file.APIGroupSuffix)
	if err != nil {
		return nil, err
	}
	serving, err := servingCertificate(o.Namespace, file, scheme, controllerKube, aggregator)
	if err != nil {
		return nil, err
	}
	tracer, err := serverboot.NewTracer(context.Background(), file.Tracing, "pinniped-supervisor")
	if err != nil {
		return nil, err
	}
	generic, err := aggregatedapi.RecommendedConfig(aggregatedapi.Options{
		BindAddress:             net.ParseIP(o.BindAddress),
		Port:                    int(*file.AggregatedAPIServerPort),
		Kubeconfig:              o.Kubeconfig,
		DisableAdmissionPlugins: file.AggregatedAPIServerDisableAdmissionPlugins,
		Discovery:               kubeClient.Discovery(),
		Title:                   "Pinniped Supervisor",
		Scheme:                  scheme.Scheme,
		Codecs:                  scheme.Codecs,
		Versions:                []schema.GroupVersion{scheme.ClientSecretGV},
		TLS:                     file.TLSProfile,
		Cert:                    serving.Provider(),
		Tracer:                  tracer.Provider(),
	})
	if err != nil {
		return nil, err
	}
	return &Config{
		File:                     file,
		Namespace:                o.Namespace,
		DeploymentName:           o.DeploymentName,
		AuditTokenFingerprintKey: auditKey,
		Tracer:                   tracer,
		KubeClient:               kubeClient,
		SupervisorClient:         supervisorClient,
		Elector:                  elector,
		Controllers:              Clients{Kube: controllerKube, Supervisor: controllerSupervisor},
		// Everything the Supervisor reads lives in its own namespace. Its informers leave out the
		// sessions' Secrets, which nothing reads from a cache (the storage reads and writes each
		// one directly): with thousands of users they would be most of the Supervisor's memory.
		KubeInformers: kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0, kubeinformers.WithNamespace(o.Namespace),
			kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sessions.NotSessionsSelector })),
		CRInformers: supervisorinformers.NewSharedInformerFactoryWithOptions(supervisorClient, 0, supervisorinformers.WithNamespace(o.Namespace)),
		Scheme:      scheme,
		Serving:     serving,
		APIServer:   generic,
	}, nil
}

// servingCertificate builds the controller of the aggregated API's serving certificate, which
// also keeps the APIService's caBundle current.
func servingCertificate(namespace string, file *config.Config, scheme *apiserver.Scheme, kubeClient kubernetes.Interface,
	aggregator aggregatorclient.Interface,
) (*servingcert.Controller, error) {
	return servingcert.New(servingcert.Config{
		Namespace:       namespace,
		SecretName:      file.Names.ServingCertificateSecret(),
		ServiceName:     file.Names.APIService,
		SecretLabels:    file.Labels,
		APIServiceNames: []string{scheme.ClientSecretGV.Version + "." + scheme.ClientSecretGV.Group},
	}, kubeClient, aggregator)
}

// tokenFingerprintKeyTimeout bounds the wait for the audit key's Secret at start-up.
const tokenFingerprintKeyTimeout = 2 * time.Minute
