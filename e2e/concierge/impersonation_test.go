package concierge

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
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

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	"sealion.dev/e2e/steps"
)

// TestImpersonationProxy checks, on clusters whose control plane is out of reach but which have a
// load balancer (managed clusters), that the impersonation proxy listens at its load balancer,
// exchanges tokens anonymously, and forwards requests as the certificate's user within RBAC.
func TestImpersonationProxy(t *testing.T) {
	var proxy configv1alpha1.ImpersonationProxyInfo
	var cred *loginv1alpha1.ClusterCredential
	f := features.New("ImpersonationProxy strategy").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			info := steps.ClusterFrom(ctx).Info
			if info.ControlPlaneVisible || !info.HasExternalLoadBalancer {
				t.Skip("mode auto runs the proxy only where no control-plane node is visible, and this test reaches it through a load balancer")
			}
			setUpLocalUsers(ctx, t, cfg)
			return ctx
		}).
		Assess("the CredentialIssuer reports the proxy listening and the signing key unavailable", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			s := waitForStrategy(ctx, t, cfg, configv1alpha1.StrategyTypeImpersonationProxy)
			if s.Reason != configv1alpha1.StrategyReasonListening || s.Frontend == nil || s.Frontend.ImpersonationProxyInfo == nil {
				t.Fatalf("strategy %+v, want Listening with the proxy's endpoint", s)
			}
			proxy = *s.Frontend.ImpersonationProxyInfo
			if !strings.HasPrefix(proxy.Endpoint, "https://") || proxy.CertificateAuthorityData == "" {
				t.Errorf("frontend %+v, want the load balancer's address (IP or hostname) and a CA", proxy)
			}
			client, err := conciergeclientset.NewForConfig(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			ci, err := client.ConfigV1alpha1().CredentialIssuers().Get(ctx, "pinniped-concierge-config", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var agent *configv1alpha1.CredentialIssuerStrategy
			for i, s := range ci.Status.Strategies {
				if s.Type == configv1alpha1.StrategyTypeKubeClusterSigningCertificate {
					agent = &ci.Status.Strategies[i]
				}
			}
			if agent == nil || agent.Status != configv1alpha1.StrategyStatusError || agent.Reason != configv1alpha1.StrategyReasonCouldNotFetchKey {
				t.Errorf("KubeClusterSigningCertificate %+v, want Error/CouldNotFetchKey", agent)
			}
			return ctx
		}).
		Assess("an anonymous TokenCredentialRequest at the proxy gets a certificate", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			resp := proxyExchange(ctx, t, proxy, "pinny:correct horse")
			if resp.Status.Credential == nil {
				t.Fatalf("no credential; message %v", resp.Status.Message)
			}
			cred = resp.Status.Credential
			if c := parseCert(t, cred.ClientCertificateData); c.Subject.CommonName != "pinny" {
				t.Errorf("certificate subject %v", c.Subject)
			}
			if resp := proxyExchange(ctx, t, proxy, "pinny:battery staple"); resp.Status.Credential != nil {
				t.Error("a wrong password got a credential")
			}
			return ctx
		}).
		Assess("the proxy forwards as the certificate's user, within RBAC", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if cred == nil {
				t.Skip("no credential")
			}
			kube := kubeClient(t, cfg)
			binding := &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "e2e-seals-view-through-proxy"},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
				Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "seals"}},
			}
			if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			defer func() {
				_ = kube.RbacV1().ClusterRoleBindings().Delete(context.WithoutCancel(ctx), binding.Name, metav1.DeleteOptions{})
			}()
			kubeconfig := proxyKubeconfig(t, cfg, proxy, cred)
			var lastErr error
			if err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				_, lastErr = steps.Kubectl(ctx, kubeconfig, "", "get", "pods", "--all-namespaces")
				return lastErr == nil, nil
			}); err != nil {
				t.Fatalf("listing pods through the proxy with the view role: %v", lastErr)
			}
			out, err := steps.Kubectl(ctx, kubeconfig, "", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
			if err != nil || out != "pinny" {
				t.Errorf("the kube-apiserver sees %q through the proxy (%v), want pinny", out, err)
			}
			if _, err := steps.Kubectl(ctx, kubeconfig, "", "get", "secrets", "-n", "kube-system"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
				t.Errorf("reading secrets, which view does not allow: got %v, want Forbidden", err)
			}
			if _, err := steps.Kubectl(ctx, kubeconfig, "", "get", "pods", "-n", "kube-system", "--as=system:admin"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
				t.Errorf("impersonating without the right to: got %v, want Forbidden", err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// proxyExchange posts a TokenCredentialRequest to the proxy with no credentials at all.
func proxyExchange(ctx context.Context, t *testing.T, proxy configv1alpha1.ImpersonationProxyInfo, token string) *loginv1alpha1.TokenCredentialRequest {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"apiVersion": "login.concierge.pinniped.dev/v1alpha1",
		"kind":       "TokenCredentialRequest",
		"spec": map[string]any{
			"token":         token,
			"authenticator": map[string]any{"apiGroup": authv1alpha1.GroupName, "kind": "WebhookAuthenticator", "name": "local-users"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, proxy.Endpoint+"/apis/login.concierge.pinniped.dev/v1alpha1/tokencredentialrequests", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := proxyHTTPClient(t, proxy).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("TokenCredentialRequest at the proxy: %s: %s", resp.Status, data)
	}
	var out loginv1alpha1.TokenCredentialRequest
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("decoding %q: %v", data, err)
	}
	return &out
}

func proxyHTTPClient(t *testing.T, proxy configv1alpha1.ImpersonationProxyInfo) *http.Client {
	t.Helper()
	ca, err := base64.StdEncoding.DecodeString(proxy.CertificateAuthorityData)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("the advertised CA holds no certificate")
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
}

// proxyKubeconfig writes a kubeconfig that reaches the cluster through the proxy with cred.
func proxyKubeconfig(t *testing.T, cfg *envconf.Config, proxy configv1alpha1.ImpersonationProxyInfo, cred *loginv1alpha1.ClusterCredential) string {
	t.Helper()
	ca, err := base64.StdEncoding.DecodeString(proxy.CertificateAuthorityData)
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: proxy.Endpoint, CertificateAuthorityData: ca}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte(cred.ClientCertificateData), ClientKeyData: []byte(cred.ClientKeyData)}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "u"}
	kc.CurrentContext = "proxy"
	path := cfg.KubeconfigFile() + ".impersonation-proxy"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImpersonationProxyDisabledWhereControlPlaneVisible checks mode auto's other half: where the
// control-plane nodes are visible (kubeadm), the proxy stays off and says why.
func TestImpersonationProxyDisabledWhereControlPlaneVisible(t *testing.T) {
	f := features.New("ImpersonationProxy disabled automatically").
		Assess("the CredentialIssuer reports the proxy disabled", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !steps.ClusterFrom(ctx).Info.ControlPlaneVisible {
				t.Skip("this cluster hides its control plane, so mode auto enables the proxy (TestImpersonationProxy)")
			}
			client, err := conciergeclientset.NewForConfig(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			var last configv1alpha1.CredentialIssuerStatus
			err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				ci, err := client.ConfigV1alpha1().CredentialIssuers().Get(ctx, "pinniped-concierge-config", metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				last = ci.Status
				for _, s := range ci.Status.Strategies {
					if s.Type == configv1alpha1.StrategyTypeImpersonationProxy {
						return s.Status == configv1alpha1.StrategyStatusError && s.Reason == configv1alpha1.StrategyReasonDisabled, nil
					}
				}
				return false, nil
			})
			if err != nil {
				t.Fatalf("no Disabled ImpersonationProxy strategy: %+v", last)
			}
			if _, err := kubeClient(t, cfg).CoreV1().Services("pinniped-concierge").Get(ctx, "pinniped-concierge-impersonation-proxy-load-balancer", metav1.GetOptions{}); err == nil {
				t.Error("the proxy's load balancer Service exists although the proxy is disabled")
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
