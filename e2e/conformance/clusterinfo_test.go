package conformance

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	"sealion.dev/e2e/steps"
)

// TestGetKubeconfigWithoutClusterInfo removes kube-public/cluster-info, as clusters bootstrapped
// without kubeadm lack it (Talos, Kamaji): the signing key still loads, the CredentialIssuer says
// what is missing and what to do, and `pinniped get kubeconfig --concierge-mode
// TokenCredentialRequestAPI` (alone, or with the endpoint and CA by flag, as that message says)
// writes a kubeconfig that logs in, with the admin kubeconfig's server as the Concierge endpoint.
func TestGetKubeconfigWithoutClusterInfo(t *testing.T) {
	skipIfInstalled(t, "deletes the cluster's kube-public/cluster-info and changes the CredentialIssuer")
	var server string
	var ca []byte
	f := features.New("get kubeconfig where cluster-info is missing").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !steps.ClusterFrom(ctx).Info.ClusterSigningKeyAvailable {
				t.Skip("cluster-info matters only to the KubeClusterSigningCertificate strategy, which needs the signing key")
			}
			setUpLocalUsers(ctx, t, cfg)
			bindGroup(ctx, t, cfg, "e2e-no-cluster-info-seals", "seals")
			waitForStrategy(ctx, t, cfg, configv1alpha1.StrategyTypeKubeClusterSigningCertificate)
			kube := kubeClient(t, cfg)
			saved, err := kube.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := kube.CoreV1().ConfigMaps("kube-public").Delete(ctx, "cluster-info", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			nudgeKubeCertAgent(ctx, t, cfg)
			// The next tests on this cluster find it as it was, the strategy working again.
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
				defer cancel()
				restored := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: saved.Name, Namespace: saved.Namespace, Labels: saved.Labels}, Data: saved.Data}
				if _, err := kube.CoreV1().ConfigMaps("kube-public").Create(ctx, restored, metav1.CreateOptions{}); err != nil {
					t.Errorf("restoring kube-public/cluster-info: %v", err)
					return
				}
				nudgeKubeCertAgent(ctx, t, cfg)
				if s := strategyWhen(ctx, t, cfg, func(s configv1alpha1.CredentialIssuerStrategy) bool {
					return s.Reason == configv1alpha1.StrategyReasonFetchedKey
				}); s.Reason != configv1alpha1.StrategyReasonFetchedKey {
					t.Errorf("after cluster-info came back the strategy is %+v", s)
				}
			})
			admin, err := clientcmd.LoadFromFile(cfg.KubeconfigFile())
			if err != nil {
				t.Fatal(err)
			}
			cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
			server, ca = cluster.Server, cluster.CertificateAuthorityData
			return ctx
		}).
		Assess("the CredentialIssuer names what is missing and what to do", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			s := strategyWhen(ctx, t, cfg, func(s configv1alpha1.CredentialIssuerStrategy) bool {
				return s.Reason == configv1alpha1.StrategyReasonCouldNotGetClusterInfo
			})
			if s.Status != configv1alpha1.StrategyStatusError || s.Reason != configv1alpha1.StrategyReasonCouldNotGetClusterInfo ||
				!strings.Contains(s.Message, "kube-public/cluster-info") || !strings.Contains(s.Message, "--concierge-endpoint") {
				t.Fatalf("strategy %+v, want Error/CouldNotGetClusterInfo naming the ConfigMap and the flags to use", s)
			}
			return ctx
		}).
		Assess("get kubeconfig with the mode alone, and with endpoint and CA, logs in", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			caFile := filepath.Join(t.TempDir(), "ca.pem")
			if err := os.WriteFile(caFile, ca, 0o600); err != nil {
				t.Fatal(err)
			}
			login := []string{"--static-token", "pinny:correct horse", "--concierge-authenticator-type", "webhook",
				"--concierge-authenticator-name", "local-users", "--concierge-mode", "TokenCredentialRequestAPI"}
			for name, flags := range map[string][]string{
				"mode alone":            login,
				"mode, endpoint and CA": append(append([]string{}, login...), "--concierge-endpoint", server, "--concierge-ca-bundle", caFile),
			} {
				user := cliUserFromFlags(ctx, t, cfg, flags...)
				written, err := clientcmd.LoadFromFile(user.kubeconfig)
				if err != nil {
					t.Fatal(err)
				}
				exec := written.AuthInfos[written.Contexts[written.CurrentContext].AuthInfo].Exec
				if exec == nil || !slices.Contains(exec.Args, "--concierge-endpoint="+server) {
					t.Errorf("%s: the kubeconfig's login does not reach the Concierge at the admin kubeconfig's %s: %+v", name, server, exec)
				}
				if out, err := user.kubectl(ctx, "get", "pods", "-n", "kube-system"); err != nil {
					t.Errorf("%s: kubectl with the written kubeconfig: %v\n%s", name, err, out)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// nudgeKubeCertAgent annotates the CredentialIssuer, which the kube cert agent's controller
// watches, so that it syncs now rather than at its next resync: it reads cluster-info when it
// syncs but may not watch it (its RBAC names that one object).
func nudgeKubeCertAgent(ctx context.Context, t *testing.T, cfg *envconf.Config) {
	t.Helper()
	patch := []byte(`{"metadata":{"annotations":{"e2e.sealion.dev/nudged":"` + time.Now().Format(time.RFC3339Nano) + `"}}}`)
	if _, err := conciergeClient(t, cfg).ConfigV1alpha1().CredentialIssuers().Patch(ctx, underTest(ctx).CredentialIssuer, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// strategyWhen waits up to two minutes (the kube cert agent resyncs every minute) for the
// KubeClusterSigningCertificate strategy to satisfy ok, and returns the last one seen.
func strategyWhen(ctx context.Context, t *testing.T, cfg *envconf.Config, ok func(configv1alpha1.CredentialIssuerStrategy) bool) configv1alpha1.CredentialIssuerStrategy {
	t.Helper()
	return strategyOfTypeWhen(ctx, t, cfg, configv1alpha1.StrategyTypeKubeClusterSigningCertificate, ok)
}

// strategyOfTypeWhen waits up to two minutes for the strategy typ to satisfy ok, and returns the
// last one seen.
func strategyOfTypeWhen(ctx context.Context, t *testing.T, cfg *envconf.Config, typ configv1alpha1.StrategyType, ok func(configv1alpha1.CredentialIssuerStrategy) bool) configv1alpha1.CredentialIssuerStrategy {
	t.Helper()
	var last configv1alpha1.CredentialIssuerStrategy
	_ = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ci, err := conciergeClient(t, cfg).ConfigV1alpha1().CredentialIssuers().Get(ctx, underTest(ctx).CredentialIssuer, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, s := range ci.Status.Strategies {
			if s.Type == typ {
				last = s
				return ok(s), nil
			}
		}
		return false, nil
	})
	return last
}
