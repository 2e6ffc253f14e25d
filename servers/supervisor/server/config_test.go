package server

import (
	"testing"
	"time"

	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	aggregatorfake "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/fake"

	generatedopenapi "sealion.dev/core/generated/openapi"
	supervisorfake "sealion.dev/core/generated/supervisor/clientset/versioned/fake"
	supervisorinformers "sealion.dev/core/generated/supervisor/informers/externalversions"
	"sealion.dev/servers/internal/leaderelection"
	"sealion.dev/servers/supervisor/apiserver"
	"sealion.dev/servers/supervisor/config"
)

const minimalFile = `
names:
  defaultTLSCertificateSecret: pinniped-supervisor-default-tls-certificate
`

// fakes are the clients a test Config talks to, to see what each stage asks of the cluster.
type fakes struct {
	kube       *kubefake.Clientset
	supervisor *supervisorfake.Clientset
	aggregator *aggregatorfake.Clientset
}

// actions counts the requests the fakes received.
func (f fakes) actions() int {
	return len(f.kube.Actions()) + len(f.supervisor.Actions()) + len(f.aggregator.Actions())
}

// testConfig is a Config as Options.Config builds it, for the file's content, with fake clients
// and a generic API server configuration that neither listens nor authenticates anyone.
func testConfig(t *testing.T, file string) (*Config, fakes) {
	t.Helper()
	parsed, err := config.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	const namespace = "supervisor-ns"
	f := fakes{kube: kubefake.NewClientset(), supervisor: supervisorfake.NewSimpleClientset(), aggregator: aggregatorfake.NewSimpleClientset()}
	scheme, err := apiserver.NewScheme(*parsed.APIGroupSuffix)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := servingCertificate(namespace, parsed, scheme, f.kube, f.aggregator)
	if err != nil {
		t.Fatal(err)
	}
	generic := genericapiserver.NewRecommendedConfig(scheme.Codecs)
	generic.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	namer := openapinamer.NewDefinitionNamer(scheme.Scheme)
	generic.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	// Both come from the secure serving options otherwise, and the test listens nowhere.
	generic.ExternalAddress = "127.0.0.1:10250"
	generic.LoopbackClientConfig = &rest.Config{Host: "https://127.0.0.1:10250"}
	elector, err := leaderelection.New(leaderelection.Config{Namespace: namespace, Name: "pinniped-supervisor", Identity: "supervisor-pod"}, f.kube.CoordinationV1())
	if err != nil {
		t.Fatal(err)
	}
	return &Config{
		File:             parsed,
		Namespace:        namespace,
		DeploymentName:   "pinniped-supervisor",
		KubeClient:       f.kube,
		SupervisorClient: f.supervisor,
		Elector:          elector,
		Controllers:      Clients{Kube: f.kube, Supervisor: f.supervisor},
		KubeInformers:    kubeinformers.NewSharedInformerFactoryWithOptions(f.kube, 0, kubeinformers.WithNamespace(namespace)),
		CRInformers:      supervisorinformers.NewSharedInformerFactoryWithOptions(f.supervisor, 0, supervisorinformers.WithNamespace(namespace)),
		Scheme:           scheme,
		Serving:          serving,
		APIServer:        generic,
	}, f
}

func TestCompleteFillsDefaults(t *testing.T) {
	c, _ := testConfig(t, minimalFile)
	completed := c.Complete()
	if completed.ShutdownDelay != 5*time.Second {
		t.Errorf("shutdown delay %v, want 5s", completed.ShutdownDelay)
	}
	if completed.ShutdownTimeout != 10*time.Second || completed.ReadHeaderTimeout != 10*time.Second || completed.IdleTimeout != 90*time.Second {
		t.Errorf("timeouts: shutdown %v, read header %v, idle %v; want 10s, 10s, 90s",
			completed.ShutdownTimeout, completed.ReadHeaderTimeout, completed.IdleTimeout)
	}
	if completed.MaxRequestsInFlight != 100 || completed.MaxMutatingRequestsInFlight != 30 || completed.MaxQueueWait != 10*time.Second {
		t.Errorf("in-flight limits %d and %d, queue wait %v; want 100, 30, 10s",
			completed.MaxRequestsInFlight, completed.MaxMutatingRequestsInFlight, completed.MaxQueueWait)
	}
}

func TestCompleteKeepsWhatIsSet(t *testing.T) {
	c, _ := testConfig(t, minimalFile)
	c.ShutdownTimeout, c.ReadHeaderTimeout, c.IdleTimeout = time.Second, 2*time.Second, 3*time.Second
	completed := c.Complete()
	if completed.ShutdownTimeout != time.Second || completed.ReadHeaderTimeout != 2*time.Second || completed.IdleTimeout != 3*time.Second {
		t.Errorf("Complete changed timeouts: shutdown %v, read header %v, idle %v",
			completed.ShutdownTimeout, completed.ReadHeaderTimeout, completed.IdleTimeout)
	}
}
