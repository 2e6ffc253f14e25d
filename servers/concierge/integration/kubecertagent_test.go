package integration

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	"sealion.dev/core/certauthority"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	conciergeinformers "sealion.dev/core/generated/concierge/informers/externalversions"
	"sealion.dev/servers/concierge/internal/controllers/kubecertagent"
	"sealion.dev/servers/concierge/internal/credentialissuer"
	"sealion.dev/servers/concierge/internal/dynamicca"
)

// cannedExecutor stands in for the agent pod: without a kubelet there is nothing to exec into.
type cannedExecutor struct{ out []byte }

func (c cannedExecutor) Exec(context.Context, string, string, string, ...string) ([]byte, error) {
	return c.out, nil
}

// The kube cert agent controller, with exactly the install's RBAC, against a real API server: it
// finds a kubeadm-like kube-controller-manager pod, creates an agent Deployment the API server
// accepts, and records a strategy the CRD's schema accepts. Pods are only objects here (no
// kubelet), so the test marks them Running itself and the exec output is canned; the real
// executor is checked for authorization only.
func TestKubeCertAgentWithInstallRBAC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, f := range []string{"01-serviceaccount.yaml", "02-rbac.yaml"} {
		_, err := env.kubectl(ctx, nil, "apply", "-f", repoPath("servers/concierge/deploy/"+f))
		require.NoError(t, err)
	}

	// The Concierge's ServiceAccount, as the install runs it.
	asConcierge := rest.CopyConfig(env.cp.RESTConfig())
	asConcierge.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + conciergeNamespace + ":pinniped-concierge"}
	kube, err := kubernetes.NewForConfig(asConcierge)
	require.NoError(t, err)
	concierge, err := conciergeclientset.NewForConfig(asConcierge)
	require.NoError(t, err)

	// The cluster as kubeadm leaves it: a node, its kube-controller-manager pod and cluster-info.
	admin := env.kube
	const nodeName = "agent-test-control-plane"
	_, err = admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}) })
	dirType := corev1.HostPathDirectoryOrCreate
	kcm := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "kube-controller-manager-" + nodeName, Namespace: "kube-system",
			Labels: map[string]string{"component": "kube-controller-manager", "tier": "control-plane"},
		},
		Spec: corev1.PodSpec{
			NodeName: nodeName, HostNetwork: true, PriorityClassName: "system-node-critical",
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			Containers: []corev1.Container{{
				Name: "kube-controller-manager", Image: "registry.k8s.io/kube-controller-manager:v1.33.13",
				Command:      []string{"kube-controller-manager", "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt", "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key"},
				VolumeMounts: []corev1.VolumeMount{{Name: "k8s-certs", MountPath: "/etc/kubernetes/pki", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "k8s-certs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/kubernetes/pki", Type: &dirType}}}},
		},
	}
	// The ServiceAccount admission plugin wants the pod's default ServiceAccount, which only
	// kube-controller-manager would have created.
	_, err = admin.CoreV1().ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	kcm = createRunningPod(ctx, t, admin, kcm) // admission added a ServiceAccount token volume
	caPEM, err := os.ReadFile(env.cp.ClientCACertFile)
	require.NoError(t, err)
	kubeconfig := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n    server: %s\n    certificate-authority-data: %s\n",
		env.cp.URL, base64.StdEncoding.EncodeToString(caPEM))
	_, err = admin.CoreV1().ConfigMaps("kube-public").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-info"}, Data: map[string]string{"kubeconfig": kubeconfig},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.CoreV1().ConfigMaps("kube-public").Delete(context.Background(), "cluster-info", metav1.DeleteOptions{})
	})

	// The controller, wired as the server wires it.
	ca, err := certauthority.New("cluster signing CA", time.Hour)
	require.NoError(t, err)
	signer := dynamicca.New("test signer")
	kubeSystem := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace("kube-system"),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = kubecertagent.ControllerManagerLabel }))
	cluster := kubeinformers.NewSharedInformerFactory(kube, 0)
	namespace := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace(conciergeNamespace))
	crs := conciergeinformers.NewSharedInformerFactory(concierge, 0)
	informers := kubecertagent.Informers{
		ControllerManagerPods: kubeSystem.Core().V1().Pods(), Nodes: cluster.Core().V1().Nodes(),
		Pods: namespace.Core().V1().Pods(), Deployments: namespace.Apps().V1().Deployments(),
		CredentialIssuers: crs.Config().V1alpha1().CredentialIssuers(),
	}
	const issuer = "kube-cert-agent-test-config"
	t.Cleanup(func() {
		_ = env.concierge.ConfigV1alpha1().CredentialIssuers().Delete(context.Background(), issuer, metav1.DeleteOptions{})
	})
	controller := kubecertagent.New(kubecertagent.Config{
		Namespace: conciergeNamespace, DeploymentName: "pinniped-concierge-kube-cert-agent",
		ServiceAccountName: "pinniped-concierge-kube-cert-agent", Image: "localhost/sealion/pinniped-server:dev",
		Labels: map[string]string{"app": "pinniped-concierge"},
	}, kube, informers, cannedExecutor{out: []byte(fmt.Sprintf(`{"tls.crt":%q,"tls.key":%q}`,
		base64.StdEncoding.EncodeToString(ca.Bundle()), base64.StdEncoding.EncodeToString(ca.PrivateKeyPEM())))},
		signer, &credentialissuer.Updater{Client: concierge, Lister: informers.CredentialIssuers.Lister(), Name: issuer})
	_, logCtx := ktesting.NewTestContext(t)
	runCtx, stop := context.WithCancel(logCtx)
	done := make(chan struct{})
	for _, f := range []interface{ Start(<-chan struct{}) }{kubeSystem, cluster, namespace, crs} {
		f.Start(runCtx.Done())
	}
	go func() { defer close(done); controller.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	// The Deployment appears, as the API server accepted it; its pod is played by the test.
	const deploymentName = "pinniped-concierge-kube-cert-agent"
	t.Cleanup(func() {
		_ = admin.AppsV1().Deployments(conciergeNamespace).Delete(context.Background(), deploymentName, metav1.DeleteOptions{})
	})
	require.Eventually(t, func() bool {
		_, err := admin.AppsV1().Deployments(conciergeNamespace).Get(ctx, deploymentName, metav1.GetOptions{})
		return err == nil
	}, time.Minute, 100*time.Millisecond, "no agent Deployment")
	deployment, err := admin.AppsV1().Deployments(conciergeNamespace).Get(ctx, deploymentName, metav1.GetOptions{})
	require.NoError(t, err)
	podSpec := deployment.Spec.Template.Spec
	assert.Equal(t, nodeName, podSpec.NodeName)
	assert.Equal(t, kcm.Spec.Volumes, podSpec.Volumes)
	assert.Equal(t, []corev1.EnvVar{{Name: "CERT_PATH", Value: "/etc/kubernetes/pki/ca.crt"}, {Name: "KEY_PATH", Value: "/etc/kubernetes/pki/ca.key"}}, podSpec.Containers[0].Env)
	assert.Equal(t, "0", podSpec.Containers[0].Resources.Requests.Cpu().String(), "the explicit zero CPU request must survive defaulting")

	agent := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: deploymentName + "-test", Namespace: conciergeNamespace,
			Labels: deployment.Spec.Template.Labels,
		},
		Spec: podSpec,
	}
	createRunningPod(ctx, t, admin, agent)

	// The strategy succeeds with the cluster-info frontend, and the signer holds the pair.
	var strategy configv1alpha1.CredentialIssuerStrategy
	require.Eventually(t, func() bool {
		ci, err := env.concierge.ConfigV1alpha1().CredentialIssuers().Get(ctx, issuer, metav1.GetOptions{})
		if err != nil || len(ci.Status.Strategies) != 1 {
			return false
		}
		strategy = ci.Status.Strategies[0]
		return strategy.Status == configv1alpha1.StrategyStatusSuccess
	}, time.Minute, 100*time.Millisecond, "the strategy did not succeed; last: %+v", &strategy)
	assert.Equal(t, configv1alpha1.StrategyReasonFetchedKey, strategy.Reason)
	assert.Equal(t, &configv1alpha1.TokenCredentialRequestAPIInfo{
		Server: env.cp.URL, CertificateAuthorityData: base64.StdEncoding.EncodeToString(caPEM),
	}, strategy.Frontend.TokenCredentialRequestAPIInfo)
	assert.Equal(t, ca.Bundle(), signer.CABundle())

	// The install lets the Concierge exec into the agent pod: the API server authorizes the request
	// and only then fails to reach a kubelet that does not exist.
	executor := &kubecertagent.PodExecutor{Config: asConcierge, Client: kube}
	_, err = executor.Exec(ctx, conciergeNamespace, agent.Name, kubecertagent.ContainerName, kubecertagent.AgentCommand, "print")
	require.Error(t, err)
	t.Logf("exec without a kubelet: %v", err)
	assert.NotContains(t, strings.ToLower(err.Error()), "forbidden")
}

// createRunningPod creates pod and reports it Running, as a kubelet would.
func createRunningPod(ctx context.Context, t *testing.T, client kubernetes.Interface, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	// Without a kubelet, a bound pod is gone only when deleted without grace.
	t.Cleanup(func() {
		_ = client.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	created.Status.Phase = corev1.PodRunning
	created, err = client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	return created
}
