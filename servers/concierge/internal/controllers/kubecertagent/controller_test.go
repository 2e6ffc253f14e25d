package kubecertagent

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	"sealion.dev/core/certauthority"
	conciergefake "sealion.dev/core/generated/concierge/clientset/versioned/fake"
	conciergeinformers "sealion.dev/core/generated/concierge/informers/externalversions"
	"sealion.dev/core/testing/fakewatch"
	"sealion.dev/servers/concierge/internal/credentialissuer"
	"sealion.dev/servers/concierge/internal/dynamicca"
	"sealion.dev/servers/internal/leaderelection"
)

var (
	t0         = time.Date(2025, 7, 1, 12, 0, 0, 0, time.UTC)
	older      = metav1.NewTime(t0.Add(-2 * time.Hour))
	newer      = metav1.NewTime(t0.Add(-time.Hour))
	issuerName = "pinniped-concierge-config"
)

// fakeExecutor returns canned output and records its calls. Tests that call sync themselves use
// its fields; those that Run the controller use its methods, which lock.
type fakeExecutor struct {
	mu    sync.Mutex
	out   []byte
	err   error
	calls []string
}

func (f *fakeExecutor) Exec(_ context.Context, namespace, pod, container string, command ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("%s/%s/%s: %s", namespace, pod, container, strings.Join(command, " ")))
	return f.out, f.err
}

func (f *fakeExecutor) set(out []byte, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out, f.err = out, err
}

func (f *fakeExecutor) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func printed(certPEM, keyPEM []byte) []byte {
	return []byte(fmt.Sprintf(`{"tls.crt":%q,"tls.key":%q}`, base64.StdEncoding.EncodeToString(certPEM), base64.StdEncoding.EncodeToString(keyPEM)))
}

func node(name string, unschedulable bool) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: unschedulable}}
}

func agentPod(name, node string, created metav1.Time, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testConfig.Namespace, UID: types.UID("uid-" + name), CreationTimestamp: created,
			Labels: map[string]string{AgentLabelKey: AgentLabelValue},
		},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// waitingAgentPod is a pending agent pod on node cp whose container waits for reason.
func waitingAgentPod(name, reason, message string) *corev1.Pod {
	p := agentPod(name, "cp", newer, corev1.PodPending)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
	}}
	return p
}

func clusterInfo(kubeconfig string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-info", Namespace: "kube-public"},
		Data:       map[string]string{"kubeconfig": kubeconfig},
	}
}

const kubeadmClusterInfo = `apiVersion: v1
kind: Config
clusters:
- name: ""
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: ` + "Q0EgUEVN" + ` # "CA PEM"
`

// world is a controller over fake clientsets.
type world struct {
	controller *Controller
	kube       *kubefake.Clientset
	concierge  *conciergefake.Clientset
	exec       *fakeExecutor
	signer     *dynamicca.Signer
	clock      *clocktesting.FakeClock
}

func newWorld(t *testing.T, cfg Config, kubeObjects []runtime.Object, conciergeObjects ...runtime.Object) *world {
	t.Helper()
	w := &world{
		kube:      kubefake.NewClientset(kubeObjects...),
		concierge: conciergefake.NewSimpleClientset(conciergeObjects...),
		exec:      &fakeExecutor{},
		signer:    dynamicca.New("test signer"),
		clock:     clocktesting.NewFakeClock(t0),
	}
	watches := fakewatch.Record(w.kube, w.concierge)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	kubeInformers := kubeinformers.NewSharedInformerFactory(w.kube, 0)
	crInformers := conciergeinformers.NewSharedInformerFactory(w.concierge, 0)
	informers := Informers{
		ControllerManagerPods: kubeInformers.Core().V1().Pods(),
		Nodes:                 kubeInformers.Core().V1().Nodes(),
		Pods:                  kubeInformers.Core().V1().Pods(),
		Deployments:           kubeInformers.Apps().V1().Deployments(),
		CredentialIssuers:     crInformers.Config().V1alpha1().CredentialIssuers(),
	}
	updater := &credentialissuer.Updater{
		Client: w.concierge, Lister: informers.CredentialIssuers.Lister(), Name: issuerName,
		Labels: map[string]string{"app": "pinniped-concierge"},
		Spec:   configv1alpha1.CredentialIssuerSpec{ImpersonationProxy: &configv1alpha1.ImpersonationProxySpec{Mode: configv1alpha1.ImpersonationProxyModeAuto}},
		Now:    w.clock.Now,
	}
	w.controller = newController(cfg, w.kube, informers, w.exec, w.signer, updater, w.clock)
	kubeInformers.Start(ctx.Done())
	crInformers.Start(ctx.Done())
	for typ, ok := range kubeInformers.WaitForCacheSync(ctx.Done()) {
		require.True(t, ok, "informer for %v did not sync", typ)
	}
	for typ, ok := range crInformers.WaitForCacheSync(ctx.Done()) {
		require.True(t, ok, "informer for %v did not sync", typ)
	}
	watches.Wait(t, 5*time.Second, "pods", "nodes", "deployments", "credentialissuers")
	w.kube.ClearActions()
	w.concierge.ClearActions()
	return w
}

func (w *world) sync(t *testing.T) error {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	return w.controller.sync(ctx)
}

// strategy returns the CredentialIssuer's strategy of the agent's type.
func (w *world) strategy(t *testing.T) configv1alpha1.CredentialIssuerStrategy {
	t.Helper()
	ci, err := w.concierge.ConfigV1alpha1().CredentialIssuers().Get(context.Background(), issuerName, metav1.GetOptions{})
	require.NoError(t, err)
	for _, s := range ci.Status.Strategies {
		if s.Type == configv1alpha1.StrategyTypeKubeClusterSigningCertificate {
			return s
		}
	}
	t.Fatalf("no %s strategy in %+v", configv1alpha1.StrategyTypeKubeClusterSigningCertificate, ci.Status.Strategies)
	return configv1alpha1.CredentialIssuerStrategy{}
}

// writes lists the kube client's mutating actions as "verb resource".
func writes(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			r := a.GetResource().Resource
			if a.GetSubresource() != "" {
				r += "/" + a.GetSubresource()
			}
			out = append(out, a.GetVerb()+" "+r)
		}
	}
	return out
}

// waitForLister waits until the informer behind list sees want objects, after the test changed them.
func waitForLister(t *testing.T, what string, count func() int, want int) {
	t.Helper()
	require.Eventually(t, func() bool { return count() == want }, 5*time.Second, 5*time.Millisecond, "informer did not see %d %s", want, what)
}

func TestSync(t *testing.T) {
	ca, err := certauthority.New("cluster CA", time.Hour)
	require.NoError(t, err)
	otherCA, err := certauthority.New("other", time.Hour)
	require.NoError(t, err)
	kcm := kubeadmControllerManager("kube-controller-manager-cp", "cp", older)
	existing := newDeployment(testConfig, testConfig.Image, kcm)
	running := agentPod("agent-1", "cp", newer, corev1.PodRunning)

	tests := []struct {
		name        string
		cfg         *Config
		objects     []runtime.Object
		execOut     []byte
		execErr     error
		preloaded   *certauthority.CA // already in the signer
		wantErr     string
		wantStatus  configv1alpha1.StrategyStatus
		wantReason  configv1alpha1.StrategyReason
		wantMessage []string
		wantWrites  []string
		wantExec    bool
		wantSigner  *certauthority.CA
	}{
		{
			name:        "no kube-controller-manager pod",
			objects:     []runtime.Object{node("cp", false), clusterInfo(kubeadmClusterInfo)},
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonCouldNotFetchKey,
			wantMessage: []string{"could not find a running kube-controller-manager pod", "running: 0", "GKE, AKS and EKS"},
		},
		{
			name: "kube-controller-manager pods not running",
			objects: []runtime.Object{func() *corev1.Pod {
				p := kcm.DeepCopy()
				p.Status.Phase = corev1.PodPending
				return p
			}()},
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonCouldNotFetchKey,
			wantMessage: []string{"labelled component=kube-controller-manager: 1, running: 0", "GKE, AKS and EKS"},
		},
		{
			name:        "creates the Deployment and waits for its pod",
			objects:     []runtime.Object{kcm, node("cp", false)},
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonPending,
			wantMessage: []string{"waiting for a running pod of the agent Deployment concierge/pinniped-concierge-kube-cert-agent on node cp (agent pods: 0)"},
			wantWrites:  []string{"create deployments"},
		},
		{
			name:        "an agent pod on another node does not count",
			objects:     []runtime.Object{kcm, existing, agentPod("agent-old", "elsewhere", newer, corev1.PodRunning)},
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonPending,
			wantMessage: []string{"waiting for a running pod", "(agent pods: 1)"},
		},
		{
			name:        "a pod whose container is being created is waited for",
			objects:     []runtime.Object{kcm, existing, waitingAgentPod("agent-1", "ContainerCreating", "")},
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonPending,
			wantMessage: []string{"waiting for a running pod", "(agent pods: 1)"},
		},
		{
			name:        "a pod whose image cannot be pulled is an error",
			objects:     []runtime.Object{kcm, existing, waitingAgentPod("agent-1", "ImagePullBackOff", `Back-off pulling image "agent:v1"`)},
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonCouldNotFetchKey,
			wantMessage: []string{"no running pod of the agent Deployment", "pod agent-1: container sleeper is waiting: ImagePullBackOff: Back-off pulling image"},
		},
		{
			name:        "a failed pod is an error",
			objects:     []runtime.Object{kcm, existing, agentPod("agent-1", "cp", newer, corev1.PodFailed)},
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonCouldNotFetchKey,
			wantMessage: []string{"pod agent-1 failed"},
		},
		{
			name: "a Deployment that cannot create pods is an error",
			objects: []runtime.Object{kcm, func() *appsv1.Deployment {
				d := existing.DeepCopy()
				d.Status.Conditions = []appsv1.DeploymentCondition{{
					Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
					Message: `pods "agent-1" is forbidden: violates PodSecurity "restricted:latest"`,
				}}
				return d
			}()},
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonCouldNotFetchKey,
			wantMessage: []string{"the Deployment reports ReplicaFailure=True: FailedCreate: pods \"agent-1\" is forbidden: violates PodSecurity"},
		},
		{
			name:       "fetches the key",
			objects:    []runtime.Object{kcm, existing, running, agentPod("agent-0", "cp", older, corev1.PodRunning), clusterInfo(kubeadmClusterInfo)},
			execOut:    printed(ca.Bundle(), ca.PrivateKeyPEM()),
			wantStatus: configv1alpha1.StrategyStatusSuccess,
			wantReason: configv1alpha1.StrategyReasonFetchedKey,
			wantExec:   true,
			wantSigner: ca,
		},
		{
			name:        "no cluster-info",
			objects:     []runtime.Object{kcm, existing, running},
			execOut:     printed(ca.Bundle(), ca.PrivateKeyPEM()),
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonCouldNotGetClusterInfo,
			wantMessage: []string{"the cluster signing key was loaded", "kube-public/cluster-info does not exist", "not built by kubeadm", "--concierge-endpoint"},
			wantExec:    true,
			wantSigner:  ca,
		},
		{
			name:        "cluster-info without a CA",
			objects:     []runtime.Object{kcm, existing, running, clusterInfo("clusters:\n- name: x\n  cluster:\n    server: https://a\n")},
			execOut:     printed(ca.Bundle(), ca.PrivateKeyPEM()),
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonCouldNotGetClusterInfo,
			wantMessage: []string{`cluster "x" has no certificate-authority-data`},
			wantExec:    true,
			wantSigner:  ca,
		},
		{
			name:        "exec fails: the loaded key stays",
			objects:     []runtime.Object{kcm, existing, running, clusterInfo(kubeadmClusterInfo)},
			execErr:     errors.New("container not found"),
			preloaded:   otherCA,
			wantErr:     "container not found",
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonCouldNotFetchKey,
			wantMessage: []string{"could not exec into the agent pod concierge/agent-1: container not found"},
			wantExec:    true,
			wantSigner:  otherCA,
		},
		{
			name:        "unexpected output is not quoted",
			objects:     []runtime.Object{kcm, existing, running, clusterInfo(kubeadmClusterInfo)},
			execOut:     []byte("SECRET-KEY-MATERIAL"),
			wantErr:     "did not print a JSON object",
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonCouldNotFetchKey,
			wantMessage: []string{"the agent pod concierge/agent-1 did not print a JSON object with base64 tls.crt and tls.key"},
			wantExec:    true,
		},
		{
			name:        "a mismatched pair",
			objects:     []runtime.Object{kcm, existing, running, clusterInfo(kubeadmClusterInfo)},
			execOut:     printed(ca.Bundle(), otherCA.PrivateKeyPEM()),
			wantErr:     "not a usable signing pair",
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonCouldNotFetchKey,
			wantMessage: []string{"the files the agent pod concierge/agent-1 read are not a usable signing pair: test signer: ", "private key does not match"},
			wantExec:    true,
		},
		{
			name:        "no image and no own pod name",
			cfg:         &Config{Namespace: testConfig.Namespace, DeploymentName: testConfig.DeploymentName},
			objects:     []runtime.Object{kcm},
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonCouldNotFetchKey,
			wantMessage: []string{"no agent image is configured (kubeCertAgent.image)"},
		},
		{
			name:        "own pod not found",
			cfg:         &Config{Namespace: testConfig.Namespace, DeploymentName: testConfig.DeploymentName, OwnPodName: "concierge-abc"},
			objects:     []runtime.Object{kcm},
			wantStatus:  configv1alpha1.StrategyStatusError,
			wantReason:  configv1alpha1.StrategyReasonCouldNotFetchKey,
			wantMessage: []string{`could not read the Concierge's own pod concierge/concierge-abc for the agent's image: pod "concierge-abc" not found`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig
			if tt.cfg != nil {
				cfg = *tt.cfg
			}
			w := newWorld(t, cfg, tt.objects)
			w.exec.out, w.exec.err = tt.execOut, tt.execErr
			if tt.preloaded != nil {
				require.NoError(t, w.signer.Set(tt.preloaded.Bundle(), tt.preloaded.PrivateKeyPEM()))
			}

			err := w.sync(t)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}

			s := w.strategy(t)
			assert.Equal(t, tt.wantStatus, s.Status)
			assert.Equal(t, tt.wantReason, s.Reason)
			assert.Equal(t, t0, s.LastUpdateTime.Time)
			for _, m := range tt.wantMessage {
				assert.Contains(t, s.Message, m)
			}
			assert.NotContains(t, s.Message, "SECRET")
			if tt.wantStatus == configv1alpha1.StrategyStatusSuccess {
				assert.Equal(t, "key was fetched successfully", s.Message)
				assert.Equal(t, &configv1alpha1.CredentialIssuerFrontend{
					Type: configv1alpha1.FrontendTypeTokenCredentialRequestAPI,
					TokenCredentialRequestAPIInfo: &configv1alpha1.TokenCredentialRequestAPIInfo{
						Server: "https://10.0.0.1:6443", CertificateAuthorityData: "Q0EgUEVN",
					},
				}, s.Frontend)
			} else {
				assert.Nil(t, s.Frontend)
			}

			assert.Equal(t, tt.wantWrites, writes(w.kube.Actions()))
			if tt.wantExec {
				// The newest running agent pod on the kube-controller-manager's node.
				assert.Equal(t, []string{"concierge/agent-1/sleeper: pinniped-concierge-kube-cert-agent print"}, w.exec.calls)
			} else {
				assert.Empty(t, w.exec.calls)
			}
			if tt.wantSigner != nil {
				assert.Equal(t, tt.wantSigner.Bundle(), w.signer.CABundle())
			} else {
				assert.Nil(t, w.signer.CABundle())
			}
		})
	}
}

// The CredentialIssuer is created when missing, other strategies are left alone, and an unchanged
// outcome writes nothing.
func TestSyncStatus(t *testing.T) {
	other := configv1alpha1.CredentialIssuerStrategy{
		Type: configv1alpha1.StrategyTypeImpersonationProxy, Status: configv1alpha1.StrategyStatusSuccess,
		Reason: configv1alpha1.StrategyReasonListening, Message: "ready", LastUpdateTime: metav1.NewTime(t0.Add(-time.Hour)),
	}
	tests := []struct {
		name    string
		objects []runtime.Object
		want    []configv1alpha1.StrategyType
	}{
		{name: "missing CredentialIssuer", want: []configv1alpha1.StrategyType{"KubeClusterSigningCertificate"}},
		{
			name: "another strategy is kept",
			objects: []runtime.Object{&configv1alpha1.CredentialIssuer{
				ObjectMeta: metav1.ObjectMeta{Name: issuerName},
				Status:     configv1alpha1.CredentialIssuerStatus{Strategies: []configv1alpha1.CredentialIssuerStrategy{other}},
			}},
			// In upstream's order: the certificate strategy first.
			want: []configv1alpha1.StrategyType{"KubeClusterSigningCertificate", "ImpersonationProxy"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, testConfig, nil, tt.objects...)
			require.NoError(t, w.sync(t))
			ci, err := w.concierge.ConfigV1alpha1().CredentialIssuers().Get(context.Background(), issuerName, metav1.GetOptions{})
			require.NoError(t, err)
			var types []configv1alpha1.StrategyType
			for _, s := range ci.Status.Strategies {
				types = append(types, s.Type)
				if s.Type == other.Type {
					assert.Equal(t, other, s)
				}
			}
			assert.Equal(t, tt.want, types)
			if len(tt.objects) == 0 {
				assert.Equal(t, map[string]string{"app": "pinniped-concierge"}, ci.Labels)
				assert.Equal(t, configv1alpha1.ImpersonationProxyModeAuto, ci.Spec.ImpersonationProxy.Mode)
			}

			// Once the informer has seen the write, the same outcome later writes nothing.
			waitForLister(t, "strategies", func() int {
				ci, err := w.controller.informers.CredentialIssuers.Lister().Get(issuerName)
				if err != nil {
					return 0
				}
				return len(ci.Status.Strategies)
			}, len(tt.want))
			w.concierge.ClearActions()
			w.clock.Step(time.Minute)
			require.NoError(t, w.sync(t))
			assert.Empty(t, w.concierge.Actions(), "an unchanged strategy caused API calls")
			assert.Equal(t, t0, w.strategy(t).LastUpdateTime.Time)
		})
	}
}

func TestControllerManagerPodSelection(t *testing.T) {
	pod := func(name, node string, created metav1.Time, mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := kubeadmControllerManager(name, node, created)
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &newer; p.Finalizers = []string{"x"} }
	pending := func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }
	unlabelled := func(p *corev1.Pod) { p.Labels = map[string]string{"component": "kube-scheduler"} }
	otherNamespace := func(p *corev1.Pod) { p.Namespace = "default" }

	tests := []struct {
		name    string
		objects []runtime.Object
		want    string
	}{
		{
			name:    "newest running pod",
			objects: []runtime.Object{node("a", false), node("b", false), pod("old", "a", older), pod("new", "b", newer)},
			want:    "new",
		},
		{
			name:    "schedulable node first",
			objects: []runtime.Object{node("a", false), node("b", true), pod("old", "a", older), pod("new", "b", newer)},
			want:    "old",
		},
		{
			name:    "a node that is not known counts as unschedulable",
			objects: []runtime.Object{node("a", false), pod("old", "a", older), pod("new", "gone", newer)},
			want:    "old",
		},
		{
			name: "pods that are pending, deleting, labelled otherwise or elsewhere are ignored",
			objects: []runtime.Object{
				node("a", false), pod("chosen", "a", older),
				pod("pending", "a", newer, pending), pod("deleting", "a", newer, deleting),
				pod("scheduler", "a", newer, unlabelled), pod("elsewhere", "a", newer, otherNamespace),
			},
			want: "chosen",
		},
		{
			name:    "equal ages: by name",
			objects: []runtime.Object{node("a", false), pod("kcm-b", "a", older), pod("kcm-a", "a", older)},
			want:    "kcm-a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, testConfig, tt.objects)
			got, err := w.controller.controllerManagerPod()
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Name)
		})
	}
}

func TestEnsureDeployment(t *testing.T) {
	kcm := kubeadmControllerManager("kube-controller-manager-cp", "cp", older)
	desired := newDeployment(testConfig, testConfig.Image, kcm)
	// What the API server returns: defaults filled in and status and revision annotations added.
	defaulted := desired.DeepCopy()
	defaulted.UID = "d1"
	defaulted.Annotations["deployment.kubernetes.io/revision"] = "1"
	defaulted.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	defaulted.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	defaulted.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst
	defaulted.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	defaulted.Spec.Template.Spec.SchedulerName = "default-scheduler"
	defaulted.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	defaulted.Status.Replicas = 1

	withFewerVolumes := kcm.DeepCopy()
	withFewerVolumes.Spec.Volumes = withFewerVolumes.Spec.Volumes[:3]
	withFewerVolumes.Spec.Containers[0].VolumeMounts = withFewerVolumes.Spec.Containers[0].VolumeMounts[:3]

	oldSelector := defaulted.DeepCopy()
	oldSelector.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{AgentLabelKey: "v2"}}

	edited := defaulted.DeepCopy()
	edited.Spec.Template.Spec.Containers[0].Image = "someone/else"

	tests := []struct {
		name       string
		existing   *appsv1.Deployment
		desired    *appsv1.Deployment
		wantWrites []string
		wantImage  string
	}{
		{name: "missing", desired: desired, wantWrites: []string{"create deployments"}},
		{name: "unchanged, with defaults filled in", existing: defaulted, desired: desired},
		{name: "edited by someone", existing: edited, desired: desired, wantWrites: []string{"update deployments"}},
		{name: "kube-controller-manager lost a volume", existing: defaulted, desired: newDeployment(testConfig, testConfig.Image, withFewerVolumes), wantWrites: []string{"update deployments"}},
		{name: "another image", existing: defaulted, desired: newDeployment(testConfig, "new/image", kcm), wantWrites: []string{"update deployments"}, wantImage: "new/image"},
		{name: "another selector", existing: oldSelector, desired: desired, wantWrites: []string{"delete deployments", "create deployments"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objects []runtime.Object
			if tt.existing != nil {
				objects = append(objects, tt.existing)
			}
			w := newWorld(t, testConfig, objects)
			_, ctx := ktesting.NewTestContext(t)
			require.NoError(t, w.controller.ensureDeployment(ctx, tt.desired))
			assert.Equal(t, tt.wantWrites, writes(w.kube.Actions()))
			if tt.wantWrites == nil {
				return
			}
			got, err := w.kube.AppsV1().Deployments(testConfig.Namespace).Get(ctx, testConfig.DeploymentName, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tt.desired.Spec, got.Spec)
			assert.Equal(t, tt.desired.Annotations[specHashAnnotation], got.Annotations[specHashAnnotation])
			if tt.existing != nil && tt.existing.Spec.Selector.MatchLabels[AgentLabelKey] == AgentLabelValue {
				assert.Equal(t, "1", got.Annotations["deployment.kubernetes.io/revision"], "other annotations are kept")
			}
			if tt.wantImage != "" {
				assert.Equal(t, tt.wantImage, got.Spec.Template.Spec.Containers[0].Image)
			}
		})
	}
}

// The informer may still show a Deployment that was already replaced.
func TestEnsureDeploymentReplacedAlready(t *testing.T) {
	kcm := kubeadmControllerManager("kube-controller-manager-cp", "cp", older)
	stale := newDeployment(testConfig, testConfig.Image, kcm)
	stale.UID = "old"
	stale.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{AgentLabelKey: "v2"}}
	w := newWorld(t, testConfig, []runtime.Object{stale})
	w.kube.PrependReactor("delete", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(appsv1.Resource("deployments"), stale.Name, errors.New("the UID in the precondition does not match"))
	})
	w.kube.PrependReactor("create", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewAlreadyExists(appsv1.Resource("deployments"), stale.Name)
	})
	_, ctx := ktesting.NewTestContext(t)
	require.NoError(t, w.controller.ensureDeployment(ctx, newDeployment(testConfig, testConfig.Image, kcm)))
	assert.Equal(t, []string{"delete deployments", "create deployments"}, writes(w.kube.Actions()))
}

func TestEnsureDeploymentErrors(t *testing.T) {
	kcm := kubeadmControllerManager("kube-controller-manager-cp", "cp", older)
	w := newWorld(t, testConfig, []runtime.Object{kcm, node("cp", false)})
	w.kube.PrependReactor("create", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(appsv1.Resource("deployments"), "x", errors.New("no RBAC"))
	})
	err := w.sync(t)
	require.ErrorContains(t, err, "creating the agent Deployment concierge/pinniped-concierge-kube-cert-agent")
	s := w.strategy(t)
	assert.Equal(t, configv1alpha1.StrategyReasonCouldNotFetchKey, s.Reason)
	assert.Contains(t, s.Message, "no RBAC")
}

// The pair is read once per agent pod and again after the cache expires or when the pod changes.
func TestKeyCache(t *testing.T) {
	ca, err := certauthority.New("cluster CA", time.Hour)
	require.NoError(t, err)
	kcm := kubeadmControllerManager("kube-controller-manager-cp", "cp", older)
	w := newWorld(t, testConfig, []runtime.Object{kcm, newDeployment(testConfig, testConfig.Image, kcm), agentPod("agent-1", "cp", older, corev1.PodRunning), clusterInfo(kubeadmClusterInfo)})
	w.exec.out = printed(ca.Bundle(), ca.PrivateKeyPEM())

	require.NoError(t, w.sync(t))
	require.NoError(t, w.sync(t))
	assert.Len(t, w.exec.calls, 1, "a second sync within the cache lifetime exec'd again")

	w.clock.Step(keyCacheTTL + time.Second)
	require.NoError(t, w.sync(t))
	assert.Len(t, w.exec.calls, 2, "the cache did not expire")

	_, err = w.kube.CoreV1().Pods(testConfig.Namespace).Create(context.Background(), agentPod("agent-2", "cp", newer, corev1.PodRunning), metav1.CreateOptions{})
	require.NoError(t, err)
	waitForLister(t, "agent pods", func() int {
		pods, _ := w.controller.informers.Pods.Lister().Pods(testConfig.Namespace).List(labels.Everything())
		return len(pods)
	}, 2)
	require.NoError(t, w.sync(t))
	require.Len(t, w.exec.calls, 3)
	assert.Contains(t, w.exec.calls[2], "agent-2")
}

// discovery.url replaces the advertised server; the CA is still cluster-info's.
func TestDiscoveryURL(t *testing.T) {
	ca, err := certauthority.New("cluster CA", time.Hour)
	require.NoError(t, err)
	cfg := testConfig
	cfg.DiscoveryURL = "https://api.example.com"
	kcm := kubeadmControllerManager("kube-controller-manager-cp", "cp", older)
	w := newWorld(t, cfg, []runtime.Object{kcm, newDeployment(cfg, cfg.Image, kcm), agentPod("agent-1", "cp", older, corev1.PodRunning), clusterInfo(kubeadmClusterInfo)})
	w.exec.out = printed(ca.Bundle(), ca.PrivateKeyPEM())

	require.NoError(t, w.sync(t))
	s := w.strategy(t)
	assert.Equal(t, configv1alpha1.StrategyStatusSuccess, s.Status)
	require.NotNil(t, s.Frontend)
	assert.Equal(t, &configv1alpha1.TokenCredentialRequestAPIInfo{Server: "https://api.example.com", CertificateAuthorityData: "Q0EgUEVN"},
		s.Frontend.TokenCredentialRequestAPIInfo)
}

// run runs the controller until the test ends.
func (w *world) run(t *testing.T) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.controller.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ctx
}

// The Run loop reconciles on start and after events.
func TestRun(t *testing.T) {
	kcm := kubeadmControllerManager("kube-controller-manager-cp", "cp", older)
	w := newWorld(t, testConfig, []runtime.Object{node("cp", false)})
	ctx := w.run(t)

	require.Eventually(t, func() bool {
		ci, err := w.concierge.ConfigV1alpha1().CredentialIssuers().Get(ctx, issuerName, metav1.GetOptions{})
		return err == nil && len(ci.Status.Strategies) == 1
	}, 5*time.Second, 10*time.Millisecond, "no strategy after start")

	_, err := w.kube.CoreV1().Pods("kube-system").Create(ctx, kcm, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := w.kube.AppsV1().Deployments(testConfig.Namespace).Get(ctx, testConfig.DeploymentName, metav1.GetOptions{})
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "no Deployment after the kube-controller-manager pod appeared")
}

// On the controller's clock, a failed sync is retried after its backoff, well before the resync,
// and the resync alone reads the key again once the key cache has expired.
func TestRunRetriesAndResyncs(t *testing.T) {
	ca, err := certauthority.New("cluster CA", time.Hour)
	require.NoError(t, err)
	kcm := kubeadmControllerManager("kube-controller-manager-cp", "cp", older)
	w := newWorld(t, testConfig, []runtime.Object{kcm, newDeployment(testConfig, testConfig.Image, kcm), agentPod("agent-1", "cp", older, corev1.PodRunning), clusterInfo(kubeadmClusterInfo)})
	w.exec.set(nil, errors.New("exec refused"))
	w.run(t)
	// The first sync and the informers' initial events may sync once or twice.
	failed := settled(t, w.exec)

	// The retry is scheduled on the fake clock when the failed sync ends, which the test cannot
	// see: step a second at a time until it runs.
	w.exec.set(printed(ca.Bundle(), ca.PrivateKeyPEM()), nil)
	var waited time.Duration
	for w.exec.count() == failed {
		require.Less(t, waited, resyncInterval/2, "the failed sync was not retried after its backoff")
		w.clock.Step(time.Second)
		waited += time.Second
		time.Sleep(50 * time.Millisecond)
	}
	require.Eventually(t, func() bool { return w.signer.CABundle() != nil }, 5*time.Second, 5*time.Millisecond, "the retry loaded no key")

	loaded := settled(t, w.exec)
	w.clock.Step(keyCacheTTL)
	require.Eventually(t, func() bool { return w.exec.count() > loaded }, 5*time.Second, 5*time.Millisecond,
		"the resync did not read the key again after the cache expired")
}

// settled waits for a first exec and then until no more come for a while, and returns their count.
func settled(t *testing.T, f *fakeExecutor) int {
	t.Helper()
	require.Eventually(t, func() bool { return f.count() > 0 }, 5*time.Second, 5*time.Millisecond, "no exec after start")
	for n := f.count(); ; n = f.count() {
		time.Sleep(200 * time.Millisecond)
		if f.count() == n {
			return n
		}
	}
}

// The bare agent pods of Pinniped v0.7.0 and older (label kube-cert-agent.pinniped.dev=true) of this
// install (all the configured labels) are deleted, conditionally on the pod seen; the current agent's
// pods, and legacy pods of another install, are left alone.
func TestLegacyAgentPodsAreDeleted(t *testing.T) {
	labelled := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testConfig.Namespace, Name: name, UID: types.UID(name + "-uid"),
			ResourceVersion: "7", Labels: labels}}
	}
	legacy := labelled("legacy", map[string]string{AgentLabelKey: "true", "app": "pinniped-concierge", "team": "auth"})
	otherInstall := labelled("other-install", map[string]string{AgentLabelKey: "true", "app": "other"})
	current := labelled("current", map[string]string{AgentLabelKey: AgentLabelValue, "team": "auth"})
	w := newWorld(t, testConfig, []runtime.Object{legacy, otherInstall, current})

	_ = w.sync(t) // no kube-controller-manager: the strategy fails, the cleanup is done anyway

	var deleted []string
	for _, a := range w.kube.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok && d.GetResource().Resource == "pods" {
			deleted = append(deleted, d.GetName())
			pre := d.GetDeleteOptions().Preconditions
			if pre == nil || ptr.Deref(pre.UID, "") != legacy.UID || ptr.Deref(pre.ResourceVersion, "") != "7" {
				t.Errorf("delete of %s without the pod's uid and resourceVersion as preconditions: %+v", d.GetName(), pre)
			}
		}
	}
	if !slices.Equal(deleted, []string{"legacy"}) {
		t.Errorf("deleted pods %v, want only [legacy]", deleted)
	}
	pods, err := w.kube.CoreV1().Pods(testConfig.Namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pods.Items, 2)
}

// A replica is ready once it has a signing pair, or once no agent is on its way: while the agent
// pod is being replaced (an upgrade changes its image) it waits, rather than serve exchanges with
// nothing to sign them. Once it has a pair, a new replacement of the agent does not unready it.
func TestSyncedWaitsForAnAgentOnItsWay(t *testing.T) {
	ca, err := certauthority.New("cluster CA", time.Hour)
	require.NoError(t, err)
	kcm := kubeadmControllerManager("kube-controller-manager-cp", "cp", older)
	w := newWorld(t, testConfig, []runtime.Object{kcm, newDeployment(testConfig, testConfig.Image, kcm),
		agentPod("agent-1", "cp", older, corev1.PodPending), clusterInfo(kubeadmClusterInfo)})
	w.exec.set(printed(ca.Bundle(), ca.PrivateKeyPEM()), nil)
	ctx := w.run(t)

	require.Eventually(t, func() bool {
		ci, err := w.concierge.ConfigV1alpha1().CredentialIssuers().Get(ctx, issuerName, metav1.GetOptions{})
		return err == nil && len(ci.Status.Strategies) == 1 && ci.Status.Strategies[0].Reason == configv1alpha1.StrategyReasonPending
	}, 5*time.Second, 10*time.Millisecond, "the strategy never said Pending")
	require.Never(t, w.controller.Synced, 300*time.Millisecond, 10*time.Millisecond, "ready while the agent was on its way, with no pair")

	setPhase := func(phase corev1.PodPhase) {
		pod, err := w.kube.CoreV1().Pods(testConfig.Namespace).Get(ctx, "agent-1", metav1.GetOptions{})
		require.NoError(t, err)
		pod.Status.Phase = phase
		_, err = w.kube.CoreV1().Pods(testConfig.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	setPhase(corev1.PodRunning)
	require.Eventually(t, w.controller.Synced, 5*time.Second, 10*time.Millisecond, "not ready once the agent ran and the pair was loaded")
	require.NotNil(t, w.signer.CABundle())

	setPhase(corev1.PodPending)
	require.Never(t, func() bool { return !w.controller.Synced() }, 300*time.Millisecond, 10*time.Millisecond, "unready while it still had its pair")
}

// Where no agent can run (here: no kube-controller-manager pod), the replica is ready all the
// same: the strategy says why, and the impersonation proxy may serve instead.
func TestSyncedWithoutAnAgent(t *testing.T) {
	w := newWorld(t, testConfig, []runtime.Object{node("cp", false)})
	w.run(t)
	require.Eventually(t, w.controller.Synced, 5*time.Second, 10*time.Millisecond, "never ready where no agent can run")
}

// A replica that is not the leader cannot update the agent Deployment (during an upgrade the
// leader may be an older replica, whose agent has another image): it loads the key from the
// agent that runs and is ready, rather than wait for an agent of its own image.
func TestNotTheLeaderLoadsFromTheRunningAgent(t *testing.T) {
	ca, err := certauthority.New("cluster CA", time.Hour)
	require.NoError(t, err)
	kcm := kubeadmControllerManager("kube-controller-manager-cp", "cp", older)
	olderAgent := newDeployment(testConfig, "registry.example/older-release:v1", kcm)
	w := newWorld(t, testConfig, []runtime.Object{kcm, olderAgent, agentPod("agent-1", "cp", older, corev1.PodRunning), clusterInfo(kubeadmClusterInfo)})
	w.exec.set(printed(ca.Bundle(), ca.PrivateKeyPEM()), nil)
	for _, verb := range []string{"create", "update", "patch", "delete"} {
		w.kube.PrependReactor(verb, "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, fmt.Errorf("%w: refusing the write", leaderelection.ErrNotLeader)
		})
	}
	require.NoError(t, w.sync(t))
	require.NotNil(t, w.signer.CABundle(), "no key loaded from the running agent")
	w.run(t)
	require.Eventually(t, w.controller.Synced, 5*time.Second, 10*time.Millisecond, "not ready with the key loaded")
}

// While the CertificateSigningRequest strategy is enabled, the agent stands down: its Deployment
// is deleted, the pair is forgotten, and the strategy says Disabled; back to auto, it runs again.
func TestStandsDownWhileCertificateSigningRequestsAreEnabled(t *testing.T) {
	ca, err := certauthority.New("cluster CA", time.Hour)
	require.NoError(t, err)
	kcm := kubeadmControllerManager("kube-controller-manager-cp", "cp", older)
	deployment := newDeployment(testConfig, testConfig.Image, kcm)
	deployment.UID = "agent-deployment"
	cfg := testConfig
	cfg.CredentialIssuer = issuerName
	ci := &configv1alpha1.CredentialIssuer{
		ObjectMeta: metav1.ObjectMeta{Name: issuerName},
		Spec: configv1alpha1.CredentialIssuerSpec{
			CertificateSigningRequest: &configv1alpha1.CertificateSigningRequestSpec{Mode: configv1alpha1.CertificateSigningRequestModeEnabled},
		},
	}
	w := newWorld(t, cfg, []runtime.Object{kcm, node("cp", false), deployment, agentPod("agent-1", "cp", newer, corev1.PodRunning)}, ci)
	require.NoError(t, w.signer.Set(ca.Bundle(), ca.PrivateKeyPEM()))

	require.NoError(t, w.sync(t))
	assert.Equal(t, []string{"delete deployments"}, writes(w.kube.Actions()))
	assert.Empty(t, w.exec.calls, "the agent was exec'd into while standing down")
	assert.Nil(t, w.signer.CABundle(), "the pair is still in the signer")
	s := w.strategy(t)
	assert.Equal(t, configv1alpha1.StrategyStatusError, s.Status)
	assert.Equal(t, configv1alpha1.StrategyReasonDisabled, s.Reason)
	assert.Contains(t, s.Message, "CertificateSigningRequest strategy is enabled")
	assert.False(t, w.controller.pending.Load(), "a replica that stands down waits for an agent")

	// Back to auto: the agent's Deployment is made again.
	ci, err = w.concierge.ConfigV1alpha1().CredentialIssuers().Get(context.Background(), issuerName, metav1.GetOptions{})
	require.NoError(t, err)
	ci.Spec.CertificateSigningRequest.Mode = configv1alpha1.CertificateSigningRequestModeAuto
	_, err = w.concierge.ConfigV1alpha1().CredentialIssuers().Update(context.Background(), ci, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitForLister(t, "auto CredentialIssuers", func() int {
		got, err := w.controller.informers.CredentialIssuers.Lister().Get(issuerName)
		if err != nil || got.Spec.CertificateSigningRequest.Mode != configv1alpha1.CertificateSigningRequestModeAuto {
			return 0
		}
		return 1
	}, 1)
	waitForLister(t, "agent Deployments", func() int {
		d, _ := w.controller.informers.Deployments.Lister().List(labels.Everything())
		return len(d)
	}, 0)
	w.kube.ClearActions()
	w.exec.out = printed(ca.Bundle(), ca.PrivateKeyPEM())
	_ = w.sync(t)
	assert.Contains(t, writes(w.kube.Actions()), "create deployments")
}
