package server

import (
	"cmp"
	"io"
	"os"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	supervisorinformers "sealion.dev/core/generated/supervisor/informers/externalversions"
	"sealion.dev/core/servingcert"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/internal/leaderelection"
	"sealion.dev/servers/internal/serverboot"
	"sealion.dev/servers/supervisor/apiserver"
	"sealion.dev/servers/supervisor/config"
)

// The listeners' HTTP server timeouts, by default.
const (
	defaultShutdownDelay     = 5 * time.Second
	defaultShutdownTimeout   = 10 * time.Second
	defaultReadHeaderTimeout = 10 * time.Second
	defaultIdleTimeout       = 90 * time.Second
)

// The listeners' limits, by default. A login takes a handful of requests of a few milliseconds
// each (a token exchange about 2 ms of the Supervisor's CPU, a password login 10 to 30 ms, most of
// it bcrypt and the kube-apiserver), and a CLI refreshes its session every few minutes: the 240
// requests a second of a 10,000-user organisation at 9 a.m. keep a few in execution. 100 GETs and
// 30 POSTs (or other methods) execute at once; the POSTs are fewer because each may hold a form of
// up to 1 MiB, and 30 fit well within the 128 MiB the pod is given. Beyond them requests wait, in
// fair queues per client address, for up to defaultMaxQueueWait: a burst waits milliseconds and is
// served, a flood from one address fills its own queues and gets 429s (see queuing).
const (
	defaultMaxRequestsInFlight         = 100
	defaultMaxMutatingRequestsInFlight = 30
	defaultMaxQueueWait                = 10 * time.Second
)

// Config is what Options.Config reads and builds; nothing in it runs yet.
type Config struct {
	// File is the configuration file, defaulted and validated.
	File *config.Config
	// Namespace is the Supervisor's own.
	Namespace string
	// DeploymentName is the Supervisor's Deployment, which owns (and names) the Secret of the
	// CSRF cookie key.
	DeploymentName string

	// KubeClient and SupervisorClient serve requests, on every replica: the OAuth endpoints'
	// sessions and the OIDCClientSecretRequest API write with them.
	KubeClient       kubernetes.Interface
	SupervisorClient supervisorclientset.Interface
	// Elector elects the replica whose controllers and session garbage collector write;
	// Controllers are the controllers' clients, whose writes are refused while this replica
	// does not lead.
	Elector     *leaderelection.Elector
	Controllers Clients
	// KubeInformers and CRInformers watch the Supervisor's namespace.
	KubeInformers kubeinformers.SharedInformerFactory
	CRInformers   supervisorinformers.SharedInformerFactory

	// The aggregated API: its types under the configured suffix, the controller of its serving
	// certificate, and the generic server configuration that serves with that certificate.
	Scheme    *apiserver.Scheme
	Serving   *servingcert.Controller
	APIServer *genericapiserver.RecommendedConfig

	// ShutdownDelay is how long the listeners keep accepting connections once the Supervisor is
	// told to stop, while Kubernetes takes the pod out of its Services' endpoints; 5s by
	// default. ShutdownTimeout bounds how long the requests in flight may then take; 10s by
	// default. Together they stay well within the pod's 30s termination grace period.
	ShutdownDelay, ShutdownTimeout time.Duration
	// ReadHeaderTimeout and IdleTimeout are the listeners' HTTP server timeouts; 10s and 90s by
	// default.
	ReadHeaderTimeout, IdleTimeout time.Duration
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound the GETs and the POSTs (or other
	// methods) that the listeners execute at once, together; 100 and 30 by default. MaxQueueWait
	// bounds how long a request beyond them waits for its turn; 10s by default.
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int
	MaxQueueWait                                     time.Duration
	// AuditOutput receives the audit events, one JSON line each; os.Stdout by default.
	AuditOutput io.Writer
	// Tracer exports the spans of the endpoints and the aggregated API when the configuration file
	// asks for traces; nil, nothing is traced.
	Tracer *serverboot.Tracer
	// AuditTokenFingerprintKey keys the audit events' token fingerprints (audit.TokenID): the
	// installation's, from its Secret. Empty, the audit logger uses a random key of its own.
	AuditTokenFingerprintKey []byte
}

// Clients are the API clients of the Supervisor's controllers.
type Clients struct {
	Kube       kubernetes.Interface
	Supervisor supervisorclientset.Interface
}

type completedConfig struct {
	*Config
	// audit writes the events of the endpoints and of the aggregated API.
	audit *audit.Logger
}

// CompletedConfig can only be made by Complete, so New always sees the defaults filled in.
type CompletedConfig struct {
	*completedConfig
}

// Complete fills in the settings left empty.
func (c *Config) Complete() CompletedConfig {
	for field, def := range map[*time.Duration]time.Duration{
		&c.ShutdownDelay:     defaultShutdownDelay,
		&c.ShutdownTimeout:   defaultShutdownTimeout,
		&c.ReadHeaderTimeout: defaultReadHeaderTimeout,
		&c.IdleTimeout:       defaultIdleTimeout,
		&c.MaxQueueWait:      defaultMaxQueueWait,
	} {
		if *field == 0 {
			*field = def
		}
	}
	c.MaxRequestsInFlight = cmp.Or(c.MaxRequestsInFlight, defaultMaxRequestsInFlight)
	c.MaxMutatingRequestsInFlight = cmp.Or(c.MaxMutatingRequestsInFlight, defaultMaxMutatingRequestsInFlight)
	if c.AuditOutput == nil {
		c.AuditOutput = os.Stdout
	}
	return CompletedConfig{&completedConfig{Config: c, audit: audit.New(c.AuditOutput, c.File.Audit.LogUsernamesAndGroups.Enabled()).WithTokenFingerprintKey(c.AuditTokenFingerprintKey)}}
}
