package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	"sealion.dev/e2e/steps"
)

// TestKubeClusterSigningCertificate checks, where the cluster signing key is reachable, that the
// kube cert agent fetched it, that the CredentialIssuer says so, and that issued certificates are
// accepted by the kube-apiserver exactly as far as RBAC allows their groups.
func TestKubeClusterSigningCertificate(t *testing.T) {
	f := features.New("KubeClusterSigningCertificate strategy").
		Assess("the CredentialIssuer reports the fetched key and the API endpoint", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !steps.ClusterFrom(ctx).Info.KubeControllerManagerPod {
				t.Skip("this cluster runs no kube-controller-manager pod, so there is no signing key to fetch")
			}
			s := waitForStrategy(ctx, t, cfg, configv1alpha1.StrategyTypeKubeClusterSigningCertificate)
			if s.Status != configv1alpha1.StrategyStatusSuccess || s.Reason != configv1alpha1.StrategyReasonFetchedKey {
				t.Fatalf("strategy %+v, want Success/FetchedKey", s)
			}
			fe := s.Frontend
			if fe == nil || fe.Type != configv1alpha1.FrontendTypeTokenCredentialRequestAPI || fe.TokenCredentialRequestAPIInfo == nil ||
				!strings.HasPrefix(fe.TokenCredentialRequestAPIInfo.Server, "https://") || fe.TokenCredentialRequestAPIInfo.CertificateAuthorityData == "" {
				t.Errorf("frontend %+v, want the TokenCredentialRequest API with server and CA", fe)
			}
			return ctx
		}).
		Assess("RBAC decides what the certificate may do", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !steps.ClusterFrom(ctx).Info.ClusterSigningKeyAvailable {
				t.Skip("certificates here are not signed by the cluster's key")
			}
			kube := kubeClient(t, cfg)
			binding := &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "e2e-seals-view"},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
				Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "seals"}},
			}
			if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			defer func() {
				_ = kube.RbacV1().ClusterRoleBindings().Delete(context.WithoutCancel(ctx), binding.Name, metav1.DeleteOptions{})
			}()

			cred := kubectlExchange(ctx, t, cfg, "pinny:correct horse", "WebhookAuthenticator", "local-users").Status.Credential
			if cred == nil {
				t.Fatal("no credential")
			}
			// RBAC takes a moment to see a new binding.
			var out string
			err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				out = kubectlWithCert(ctx, t, cfg, cred, "auth", "can-i", "list", "pods", "--all-namespaces")
				return out == "yes", nil
			})
			if err != nil {
				t.Fatalf("the group's view binding never took effect: can-i says %q", out)
			}
			if _, err := kubectlWithCertErr(ctx, cfg, cred, "get", "pods", "-n", "kube-system"); err != nil {
				t.Errorf("listing pods with the view role: %v", err)
			}
			if _, err := kubectlWithCertErr(ctx, cfg, cred, "get", "secrets", "-n", "kube-system"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
				t.Errorf("reading secrets, which view does not allow: got %v, want Forbidden", err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// waitForStrategy waits until the CredentialIssuer reports strategy typ successful, or any
// strategy when typ is empty, and returns it.
func waitForStrategy(ctx context.Context, t *testing.T, cfg *envconf.Config, typ configv1alpha1.StrategyType) configv1alpha1.CredentialIssuerStrategy {
	t.Helper()
	s, err := steps.WaitForStrategy(ctx, cfg, typ, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// kubectlWithCert runs kubectl against the cluster as the holder of the issued certificate.
func kubectlWithCert(ctx context.Context, t *testing.T, cfg *envconf.Config, cred *loginv1alpha1.ClusterCredential, args ...string) string {
	t.Helper()
	out, err := kubectlWithCertErr(ctx, cfg, cred, args...)
	if err != nil && !strings.Contains(err.Error(), "exit status 1") {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

func kubectlWithCertErr(ctx context.Context, cfg *envconf.Config, cred *loginv1alpha1.ClusterCredential, args ...string) (string, error) {
	admin, err := clientcmd.LoadFromFile(cfg.KubeconfigFile())
	if err != nil {
		return "", err
	}
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = cluster
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte(cred.ClientCertificateData), ClientKeyData: []byte(cred.ClientKeyData)}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	path := cfg.KubeconfigFile() + ".issued-cert"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", err
	}
	return steps.Kubectl(ctx, path, "", args...)
}
