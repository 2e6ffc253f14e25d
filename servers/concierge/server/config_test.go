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

	conciergefake "sealion.dev/core/generated/concierge/clientset/versioned/fake"
	conciergeinformers "sealion.dev/core/generated/concierge/informers/externalversions"
	generatedopenapi "sealion.dev/core/generated/openapi"
	"sealion.dev/servers/concierge/apiserver"
	"sealion.dev/servers/concierge/config"
	"sealion.dev/servers/internal/leaderelection"
)

const minimalFile = `
names:
  servingCertificateSecret: pinniped-concierge-api-tls-serving-certificate
  credentialIssuer: pinniped-concierge-config
  apiService: pinniped-concierge-api
`

// fakes are the clients a test Config talks to, to see what each stage asks of the cluster.
type fakes struct {
	kube       *kubefake.Clientset
	concierge  *conciergefake.Clientset
	aggregator *aggregatorfake.Clientset
}

// actions counts the requests the fakes received.
func (f fakes) actions() int {
	return len(f.kube.Actions()) + len(f.concierge.Actions()) + len(f.aggregator.Actions())
}

// testConfig is a Config as Options.Config builds it, for the file's content, with fake clients
// and a generic API server configuration that neither listens nor authenticates anyone.
func testConfig(t *testing.T, file string) (*Config, fakes) {
	t.Helper()
	parsed, err := config.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	f := fakes{kube: kubefake.NewClientset(), concierge: conciergefake.NewSimpleClientset(), aggregator: aggregatorfake.NewSimpleClientset()}
	scheme, err := apiserver.NewScheme(*parsed.APIGroupSuffix)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := servingCertificate("concierge-ns", parsed, scheme, f.kube, f.aggregator)
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
	elector, err := leaderelection.New(leaderelection.Config{Namespace: "concierge-ns", Name: "pinniped-concierge", Identity: "concierge-pod"}, f.kube.CoordinationV1())
	if err != nil {
		t.Fatal(err)
	}
	return &Config{
		File:               parsed,
		Elector:            elector,
		Namespace:          "concierge-ns",
		PodName:            "concierge-pod",
		BindAddress:        "127.0.0.1",
		RESTConfig:         &rest.Config{Host: "https://kube-apiserver.invalid"},
		KubeClient:         f.kube,
		ConciergeClient:    f.concierge,
		NamespaceInformers: kubeinformers.NewSharedInformerFactoryWithOptions(f.kube, 0, kubeinformers.WithNamespace("concierge-ns")),
		CRInformers:        conciergeinformers.NewSharedInformerFactory(f.concierge, 0),
		Scheme:             scheme,
		Serving:            serving,
		APIServer:          generic,
	}, f
}

func TestCompleteFillsDefaults(t *testing.T) {
	tests := []struct {
		name, bindAddress, file string
		wantAddress             string
	}{
		{name: "defaults", bindAddress: "0.0.0.0", file: minimalFile, wantAddress: "0.0.0.0:8444"},
		{name: "IPv6", bindAddress: "::1", file: minimalFile, wantAddress: "[::1]:8444"},
		{name: "configured port", bindAddress: "127.0.0.1", file: minimalFile + "impersonationProxyServerPort: 9444\n", wantAddress: "127.0.0.1:9444"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := testConfig(t, tt.file)
			c.BindAddress = tt.bindAddress
			completed := c.Complete()
			if completed.ImpersonationProxyAddress != tt.wantAddress {
				t.Errorf("ImpersonationProxyAddress = %q, want %q", completed.ImpersonationProxyAddress, tt.wantAddress)
			}
			if completed.SignerReloadInterval != 2*time.Second {
				t.Errorf("SignerReloadInterval = %v, want 2s", completed.SignerReloadInterval)
			}
		})
	}
}

func TestCompleteKeepsWhatIsSet(t *testing.T) {
	c, _ := testConfig(t, minimalFile)
	c.ImpersonationProxyAddress = "127.0.0.1:0"
	c.SignerReloadInterval = time.Minute
	completed := c.Complete()
	if completed.ImpersonationProxyAddress != "127.0.0.1:0" || completed.SignerReloadInterval != time.Minute {
		t.Errorf("Complete changed settings: address %q, interval %v", completed.ImpersonationProxyAddress, completed.SignerReloadInterval)
	}
}
