package impersonationproxy

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	conciergefake "sealion.dev/core/generated/concierge/clientset/versioned/fake"
	conciergeinformers "sealion.dev/core/generated/concierge/informers/externalversions"
	"sealion.dev/core/testing/fakewatch"
	"sealion.dev/servers/concierge/internal/dynamicca"
)

func TestControlPlaneVisible(t *testing.T) {
	node := func(labels map[string]string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	}
	tests := []struct {
		name  string
		nodes []corev1.Node
		want  bool
	}{
		{"workers only", []corev1.Node{node(map[string]string{"cloud.google.com/gke-nodepool": "p"}), node(nil)}, false},
		{"control-plane role", []corev1.Node{node(nil), node(map[string]string{"node-role.kubernetes.io/control-plane": ""})}, true},
		{"legacy master role", []corev1.Node{node(map[string]string{"node-role.kubernetes.io/master": ""})}, true},
		{"node-role label control-plane", []corev1.Node{node(map[string]string{"kubernetes.io/node-role": "control-plane"})}, true},
		{"node-role label master", []corev1.Node{node(map[string]string{"kubernetes.io/node-role": "master"})}, true},
		{"node-role label worker", []corev1.Node{node(map[string]string{"kubernetes.io/node-role": "worker"})}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, controlPlaneVisible(tt.nodes)) })
	}
}

// recorder keeps the last strategy written.
type recorder struct {
	last configv1alpha1.CredentialIssuerStrategy
}

func (r *recorder) SetStrategy(_ context.Context, s configv1alpha1.CredentialIssuerStrategy) error {
	r.last = s
	return nil
}

// testController is a Controller on fake clients with running informers; its listener serves
// on a free loopback port.
type testController struct {
	c      *Controller
	kube   *kubefake.Clientset
	status *recorder
	signer *dynamicca.Signer
	// addr is where the listener serves once started.
	addr chan string
}

func newTestController(t *testing.T, spec configv1alpha1.ImpersonationProxySpec, objects ...runtime.Object) *testController {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kube := kubefake.NewClientset(objects...)
	ci := &configv1alpha1.CredentialIssuer{ObjectMeta: metav1.ObjectMeta{Name: "ci"}, Spec: configv1alpha1.CredentialIssuerSpec{ImpersonationProxy: &spec}}
	concierge := conciergefake.NewSimpleClientset(ci)
	watches := fakewatch.Record(kube, concierge)
	kubeInf := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace("ns"))
	ciInf := conciergeinformers.NewSharedInformerFactory(concierge, 0)
	tc := &testController{kube: kube, status: &recorder{}, signer: dynamicca.New("test"), addr: make(chan string, 1)}
	tc.c = New(Config{
		Namespace: "ns", CredentialIssuerName: "ci", LoadBalancerServiceName: "lb", ClusterIPServiceName: "cip",
		SignerSecretName: "signer", ServingCASecretName: "serving-ca", ServingCertSecretName: "serving", LegacySecretName: "legacy",
		Selector: map[string]string{"app": "c"}, Address: "127.0.0.1:0", Port: 8444,
	}, kube, Informers{
		CredentialIssuers: ciInf.Config().V1alpha1().CredentialIssuers(),
		Services:          kubeInf.Core().V1().Services(),
		Secrets:           kubeInf.Core().V1().Secrets(),
	}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }), tc.signer, tc.status)
	tc.c.listener.listen = func(network, _ string) (net.Listener, error) {
		ln, err := net.Listen(network, "127.0.0.1:0")
		if err == nil {
			tc.addr <- ln.Addr().String()
		}
		return ln, err
	}
	kubeInf.Start(ctx.Done())
	ciInf.Start(ctx.Done())
	kubeInf.WaitForCacheSync(ctx.Done())
	ciInf.WaitForCacheSync(ctx.Done())
	watches.Wait(t, 5*time.Second, "credentialissuers", "services", "secrets")
	t.Cleanup(func() { tc.c.listener.stop(context.Background(), 0) })
	return tc
}

func TestSync(t *testing.T) {
	worker := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w"}}
	controlPlane := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}}}
	lb := func(ip string) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "lb", Namespace: "ns"},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.9"},
		}
		if ip != "" {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		}
		return s
	}
	proxySpec := func(mode configv1alpha1.ImpersonationProxyMode, svc configv1alpha1.ImpersonationProxyServiceType, external string) configv1alpha1.ImpersonationProxySpec {
		return configv1alpha1.ImpersonationProxySpec{Mode: mode, Service: configv1alpha1.ImpersonationProxyServiceSpec{Type: svc}, ExternalEndpoint: external}
	}
	tests := []struct {
		name         string
		spec         configv1alpha1.ImpersonationProxySpec
		objects      []runtime.Object
		wantStatus   configv1alpha1.StrategyStatus
		wantReason   configv1alpha1.StrategyReason
		wantEndpoint string
		wantListen   bool
		wantServices []string
	}{
		{
			name: "auto with a visible control plane is disabled", spec: proxySpec("auto", "LoadBalancer", ""),
			objects:    []runtime.Object{controlPlane, worker},
			wantStatus: configv1alpha1.StrategyStatusError, wantReason: configv1alpha1.StrategyReasonDisabled,
		},
		{
			name: "disabled removes the Services", spec: proxySpec("disabled", "LoadBalancer", ""),
			objects:    []runtime.Object{worker, lb("127.0.10.1")},
			wantStatus: configv1alpha1.StrategyStatusError, wantReason: configv1alpha1.StrategyReasonDisabled,
		},
		{
			name: "auto without a control plane waits for the load balancer", spec: proxySpec("auto", "LoadBalancer", ""),
			objects:    []runtime.Object{worker},
			wantStatus: configv1alpha1.StrategyStatusError, wantReason: configv1alpha1.StrategyReasonPending,
			wantListen: true, wantServices: []string{"lb"},
		},
		{
			name: "listening at the load balancer's address", spec: proxySpec("auto", "LoadBalancer", ""),
			objects:    []runtime.Object{worker, lb("127.0.10.1")},
			wantStatus: configv1alpha1.StrategyStatusSuccess, wantReason: configv1alpha1.StrategyReasonListening,
			wantEndpoint: "https://127.0.10.1", wantListen: true, wantServices: []string{"lb"},
		},
		{
			name: "enabled with ClusterIP replaces the load balancer", spec: proxySpec("enabled", "ClusterIP", ""),
			objects: []runtime.Object{controlPlane, lb("127.0.10.1"), &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "cip", Namespace: "ns"},
				Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.0.0.7"},
			}},
			wantStatus: configv1alpha1.StrategyStatusSuccess, wantReason: configv1alpha1.StrategyReasonListening,
			wantEndpoint: "https://10.0.0.7", wantListen: true, wantServices: []string{"cip"},
		},
		{
			name: "no Service and an external endpoint", spec: proxySpec("enabled", "None", "proxy.example.com:8443"),
			objects:    []runtime.Object{worker},
			wantStatus: configv1alpha1.StrategyStatusSuccess, wantReason: configv1alpha1.StrategyReasonListening,
			wantEndpoint: "https://proxy.example.com:8443", wantListen: true,
		},
		{
			name: "no Service and no endpoint is a setup error", spec: proxySpec("enabled", "None", ""),
			objects:    []runtime.Object{worker},
			wantStatus: configv1alpha1.StrategyStatusError, wantReason: configv1alpha1.StrategyReasonErrorDuringSetup,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			tc := newTestController(t, tt.spec, tt.objects...)
			c, kube, status, signer := tc.c, tc.kube, tc.status, tc.signer

			err := c.sync(ctx)
			if tt.wantReason == configv1alpha1.StrategyReasonErrorDuringSetup {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.wantStatus, status.last.Status)
			assert.Equal(t, tt.wantReason, status.last.Reason, status.last.Message)
			assert.Equal(t, tt.wantListen, c.listener.running())
			if tt.wantEndpoint != "" {
				require.NotNil(t, status.last.Frontend)
				assert.Equal(t, tt.wantEndpoint, status.last.Frontend.ImpersonationProxyInfo.Endpoint)
				assert.NotEmpty(t, status.last.Frontend.ImpersonationProxyInfo.CertificateAuthorityData)
			}
			services, err := kube.CoreV1().Services("ns").List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			var names []string
			for _, s := range services.Items {
				names = append(names, s.Name)
			}
			assert.ElementsMatch(t, tt.wantServices, names)
			// The signer is loaded exactly while the proxy runs.
			assert.Equal(t, tt.wantListen, signer.CABundle() != nil)
		})
	}
}

// The legacy token Secret is deleted whether or not the proxy runs; other Secrets stay.
func TestDeletesLegacySecret(t *testing.T) {
	ctx := context.Background()
	controlPlane := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}}}
	legacy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: "ns"}, Type: corev1.SecretTypeServiceAccountToken}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns"}}
	tc := newTestController(t, configv1alpha1.ImpersonationProxySpec{Mode: "auto"}, controlPlane, legacy, other)
	require.NoError(t, tc.c.sync(ctx))
	_, err := tc.kube.CoreV1().Secrets("ns").Get(ctx, "legacy", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the legacy Secret is still there: %v", err)
	_, err = tc.kube.CoreV1().Secrets("ns").Get(ctx, "other", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, configv1alpha1.StrategyReasonDisabled, tc.status.last.Reason)

	// Once gone (the informer has not seen it go yet), nothing fails.
	require.NoError(t, tc.c.sync(ctx))
}

func TestDesiredServiceAnnotations(t *testing.T) {
	c := &Controller{cfg: Config{Namespace: "ns", Port: 8444}}
	current := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		"theirs": "keep", "old": "drop", AnnotationKeysAnnotation: `["old"]`,
	}}}
	got := c.desiredService("lb", corev1.ServiceTypeLoadBalancer, configv1alpha1.ImpersonationProxyServiceSpec{
		Annotations: map[string]string{"new": "v"}, LoadBalancerIP: "1.2.3.4",
	}, current)
	assert.Equal(t, map[string]string{"theirs": "keep", "new": "v", AnnotationKeysAnnotation: `["new"]`}, got.Annotations)
	assert.Equal(t, "1.2.3.4", got.Spec.LoadBalancerIP)
	assert.Equal(t, int32(443), got.Spec.Ports[0].Port)
	assert.Equal(t, int32(8444), got.Spec.Ports[0].TargetPort.IntVal)
}
