package conformance

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	"sealion.dev/e2e/steps"
)

// TestImpersonationProxyEnabledAtClusterIP turns the proxy on explicitly where mode auto leaves it
// off (the control plane is visible), behind a ClusterIP Service: both strategies then succeed
// side by side, and a certificate obtained anonymously through the proxy works through it.
// The CredentialIssuer's spec is put back afterwards, and the proxy must switch off again.
func TestImpersonationProxyEnabledAtClusterIP(t *testing.T) {
	skipIfInstalled(t, "changes the CredentialIssuer's impersonation proxy settings")
	var proxy configv1alpha1.ImpersonationProxyInfo
	var cred *loginv1alpha1.ClusterCredential
	var restore func(context.Context) error
	f := features.New("ImpersonationProxy enabled at a ClusterIP Service").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if info := steps.ClusterFrom(ctx).Info; !info.ControlPlaneVisible || !info.ClusterSigningKeyAvailable {
				t.Skip("mode auto already runs the proxy where the control plane is hidden (TestImpersonationProxy), and where the signing key is out of reach the suite enables the proxy itself; this test enables it beside the signing key")
			}
			setUpLocalUsers(ctx, t, cfg)
			restore = setImpersonationProxySpec(ctx, t, cfg, &configv1alpha1.ImpersonationProxySpec{
				Mode:    configv1alpha1.ImpersonationProxyModeEnabled,
				Service: configv1alpha1.ImpersonationProxyServiceSpec{Type: configv1alpha1.ImpersonationProxyServiceTypeClusterIP},
			})
			// Whatever fails below, the next tests find the spec as it was.
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
				defer cancel()
				if err := restore(ctx); err != nil {
					t.Errorf("restoring the CredentialIssuer's impersonation proxy spec: %v", err)
				}
			})
			return ctx
		}).
		Assess("both strategies succeed, the proxy at the Service's cluster IP", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			agent := waitForStrategy(ctx, t, cfg, configv1alpha1.StrategyTypeKubeClusterSigningCertificate)
			if agent.Reason != configv1alpha1.StrategyReasonFetchedKey {
				t.Errorf("KubeClusterSigningCertificate %+v, want Success/FetchedKey", agent)
			}
			s := waitForStrategy(ctx, t, cfg, configv1alpha1.StrategyTypeImpersonationProxy)
			if s.Reason != configv1alpha1.StrategyReasonListening || s.Frontend == nil || s.Frontend.ImpersonationProxyInfo == nil {
				t.Fatalf("strategy %+v, want Listening with the proxy's endpoint", s)
			}
			info := *s.Frontend.ImpersonationProxyInfo
			svc, err := kubeClient(t, cfg).CoreV1().Services(underTest(ctx).Concierge.Namespace).Get(ctx, underTest(ctx).Concierge.Name("impersonation-proxy-cluster-ip"), metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the ClusterIP Service: %v", err)
			}
			if u, err := url.Parse(info.Endpoint); err != nil || u.Scheme != "https" || u.Hostname() != svc.Spec.ClusterIP || (u.Port() != "" && u.Port() != "443") {
				t.Errorf("endpoint %q, want https at the cluster IP %s", info.Endpoint, svc.Spec.ClusterIP)
			}
			if info.CertificateAuthorityData == "" {
				t.Error("no CA for the proxy's endpoint")
			}
			requireReachable(ctx, t, info.Endpoint)
			proxy = info
			return ctx
		}).
		Assess("an anonymous TokenCredentialRequest at the proxy gets a certificate", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if proxy.Endpoint == "" {
				t.Skip("the proxy is not listening")
			}
			resp := proxyExchange(ctx, t, proxy, "pinny:correct horse")
			if resp.Status.Credential == nil {
				t.Fatalf("no credential; message %v", resp.Status.Message)
			}
			cred = resp.Status.Credential
			if c := parseCert(t, cred.ClientCertificateData); c.Subject.CommonName != "pinny" {
				t.Errorf("certificate subject %v", c.Subject)
			}
			return ctx
		}).
		Assess("kubectl auth whoami through the proxy shows the user", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if cred == nil {
				t.Skip("no credential")
			}
			out, err := steps.Kubectl(ctx, proxyKubeconfig(t, cfg, proxy, cred), "", "auth", "whoami",
				"-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
			if err != nil || (out != "pinny [seals walruses system:authenticated]" && out != `pinny ["seals","walruses","system:authenticated"]`) {
				t.Errorf("the kube-apiserver sees %q through the proxy (%v), want pinny in seals and walruses", out, err)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := restore(ctx); err != nil {
				t.Fatalf("restoring the CredentialIssuer's impersonation proxy spec: %v", err)
			}
			// Mode auto (or disabled) on a cluster whose control plane is visible switches the proxy off again.
			client := conciergeClient(t, cfg)
			var last configv1alpha1.CredentialIssuerStatus
			err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				ci, err := client.ConfigV1alpha1().CredentialIssuers().Get(ctx, underTest(ctx).CredentialIssuer, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				last = ci.Status
				if spec := ci.Spec.ImpersonationProxy; spec != nil && spec.Mode == configv1alpha1.ImpersonationProxyModeEnabled {
					return true, nil // it was enabled before this test, and stays so
				}
				for _, s := range ci.Status.Strategies {
					if s.Type == configv1alpha1.StrategyTypeImpersonationProxy {
						return s.Status == configv1alpha1.StrategyStatusError && s.Reason == configv1alpha1.StrategyReasonDisabled, nil
					}
				}
				return false, nil
			})
			if err != nil {
				t.Errorf("the proxy was not disabled again after restoring the spec; status %+v", last)
			}
			if _, err := kubeClient(t, cfg).CoreV1().Services(underTest(ctx).Concierge.Namespace).Get(ctx, underTest(ctx).Concierge.Name("impersonation-proxy-cluster-ip"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the ClusterIP Service outlived the disabled proxy (get: %v)", err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// setImpersonationProxySpec replaces the CredentialIssuer's impersonation proxy spec and returns a
// function that puts the previous one back; calling it more than once restores only once.
func setImpersonationProxySpec(ctx context.Context, t *testing.T, cfg *envconf.Config, spec *configv1alpha1.ImpersonationProxySpec) func(context.Context) error {
	t.Helper()
	cis := conciergeClient(t, cfg).ConfigV1alpha1().CredentialIssuers()
	var previous *configv1alpha1.ImpersonationProxySpec
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ci, err := cis.Get(ctx, underTest(ctx).CredentialIssuer, metav1.GetOptions{})
		if err != nil {
			return err
		}
		previous = ci.Spec.ImpersonationProxy.DeepCopy()
		ci.Spec.ImpersonationProxy = spec
		_, err = cis.Update(ctx, ci, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting the CredentialIssuer's impersonation proxy spec: %v", err)
	}
	restored := false
	return func(ctx context.Context) error {
		if restored {
			return nil
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			ci, err := cis.Get(ctx, underTest(ctx).CredentialIssuer, metav1.GetOptions{})
			if err != nil {
				return err
			}
			ci.Spec.ImpersonationProxy = previous
			_, err = cis.Update(ctx, ci, metav1.UpdateOptions{})
			return err
		})
		restored = err == nil
		return err
	}
}

// requireReachable fails, or skips where the cluster is not this machine's own, unless endpoint
// accepts TCP connections from the test's host: a cluster IP is reachable from a node (kube-proxy
// rewrites the node's own traffic too) but not from outside the cluster.
func requireReachable(ctx context.Context, t *testing.T, endpoint string) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var conn net.Conn
		conn, lastErr = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", host)
		if lastErr != nil {
			return false, nil
		}
		_ = conn.Close()
		return true, nil
	}); err != nil {
		if !steps.ClusterFrom(ctx).Info.ChangesHost {
			t.Skipf("the proxy's cluster IP %s is not reachable from outside this cluster: %v", host, lastErr)
		}
		t.Fatalf("the proxy's cluster IP %s is not reachable from this node: %v", host, lastErr)
	}
}

func conciergeClient(t *testing.T, cfg *envconf.Config) conciergeclientset.Interface {
	t.Helper()
	c, err := conciergeclientset.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}
