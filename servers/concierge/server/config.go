package server

import (
	"net"
	"strconv"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	conciergeinformers "sealion.dev/core/generated/concierge/informers/externalversions"
	"sealion.dev/core/servingcert"
	"sealion.dev/servers/concierge/apiserver"
	"sealion.dev/servers/concierge/config"
	"sealion.dev/servers/internal/leaderelection"
	"sealion.dev/servers/internal/serverboot"
)

// defaultSignerReloadInterval is how often the signer's files are re-read, when the configuration
// names them: a rotated CA is picked up within seconds.
const defaultSignerReloadInterval = 2 * time.Second

// Config is what Options.Config reads and builds; nothing in it runs yet.
type Config struct {
	// File is the configuration file, defaulted and validated.
	File *config.Config
	// Namespace and PodName are the Concierge's own; its listeners listen on BindAddress.
	Namespace, PodName, BindAddress string

	// RESTConfig writes whether this replica leads or not: the impersonation proxy requests its
	// ServiceAccount's tokens with it.
	RESTConfig *rest.Config
	// Elector elects the replica whose controllers write; KubeClient and ConciergeClient are
	// the controllers', and their writes are refused while this replica does not lead.
	Elector         *leaderelection.Elector
	KubeClient      kubernetes.Interface
	ConciergeClient conciergeclientset.Interface
	// NamespaceInformers watch the Concierge's own namespace, CRInformers its custom resources.
	NamespaceInformers kubeinformers.SharedInformerFactory
	CRInformers        conciergeinformers.SharedInformerFactory

	// The aggregated API: its types under the configured suffix, the controller of its serving
	// certificate, and the generic server configuration that serves with that certificate.
	Scheme    *apiserver.Scheme
	Serving   *servingcert.Controller
	APIServer *genericapiserver.RecommendedConfig

	// ImpersonationProxyAddress is where the impersonation proxy listens when it runs; by default
	// BindAddress with the configured impersonationProxyServerPort.
	ImpersonationProxyAddress string
	// SignerReloadInterval is how often the signer's files are re-read; 2s by default.
	SignerReloadInterval time.Duration
	// AuditTokenFingerprintKey keys the audit events' token fingerprints (audit.TokenID): the
	// installation's, from its Secret. Empty, the audit logger uses a random key of its own.
	AuditTokenFingerprintKey []byte
	// Tracer exports the spans of the aggregated API and the impersonation proxy when the
	// configuration file asks for traces; nil, nothing is traced.
	Tracer *serverboot.Tracer
}

type completedConfig struct {
	*Config
}

// CompletedConfig can only be made by Complete, so New always sees the defaults filled in.
type CompletedConfig struct {
	*completedConfig
}

// Complete fills in the settings left empty.
func (c *Config) Complete() CompletedConfig {
	if c.ImpersonationProxyAddress == "" {
		c.ImpersonationProxyAddress = net.JoinHostPort(c.BindAddress, strconv.FormatInt(*c.File.ImpersonationProxyServerPort, 10))
	}
	if c.SignerReloadInterval == 0 {
		c.SignerReloadInterval = defaultSignerReloadInterval
	}
	return CompletedConfig{&completedConfig{c}}
}
