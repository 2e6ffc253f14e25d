package conformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	"sealion.dev/core/certauthority"
	"sealion.dev/e2e/steps"
)

// externalTLSSecretName is the Secret the test points spec.impersonationProxy.tls at.
const externalTLSSecretName = "e2e-impersonation-proxy-tls"

// TestImpersonationProxyExternalTLS points the CredentialIssuer at a kubernetes.io/tls Secret
// with a certificate from a CA of the test's own, as cert-manager would make one: the status
// first reports the missing Secret, then advertises the Secret's ca.crt, a client trusting only
// that CA gets a credential and uses it through the proxy, a renewed certificate is served
// without a restart, and removing spec.tls brings back the generated CA clients had before.
func TestImpersonationProxyExternalTLS(t *testing.T) {
	skipIfInstalled(t, "changes the CredentialIssuer's impersonation proxy settings")
	var generated configv1alpha1.ImpersonationProxyInfo
	var ca *certauthority.CA
	var restore func(context.Context) error
	f := features.New("ImpersonationProxy with an external serving certificate").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			skipUnlessProxyServes(ctx, t)
			setUpLocalUsers(ctx, t, cfg)
			generated = listeningProxy(ctx, t, cfg)
			var err error
			if ca, err = certauthority.New("e2e external impersonation proxy CA", time.Hour); err != nil {
				t.Fatal(err)
			}
			ci, err := conciergeClient(t, cfg).ConfigV1alpha1().CredentialIssuers().Get(ctx, underTest(ctx).CredentialIssuer, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			spec := ci.Spec.ImpersonationProxy.DeepCopy()
			spec.TLS = &configv1alpha1.ImpersonationProxyTLSSpec{SecretName: externalTLSSecretName}
			restore = setImpersonationProxySpec(ctx, t, cfg, spec)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
				defer cancel()
				if err := restore(ctx); err != nil {
					t.Errorf("restoring the CredentialIssuer's impersonation proxy spec: %v", err)
				}
				_ = kubeClient(t, cfg).CoreV1().Secrets(underTest(ctx).Concierge.Namespace).Delete(ctx, externalTLSSecretName, metav1.DeleteOptions{})
			})
			return ctx
		}).
		Assess("a missing Secret shows in the status", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			s := waitForProxyStrategy(ctx, t, cfg, func(s configv1alpha1.CredentialIssuerStrategy) bool {
				return s.Reason == configv1alpha1.StrategyReasonErrorDuringSetup
			})
			if s.Status != configv1alpha1.StrategyStatusError || !strings.Contains(s.Message, fmt.Sprintf("%q not found", externalTLSSecretName)) {
				t.Errorf("strategy %+v, want an error naming the missing Secret", s)
			}
			return ctx
		}).
		Assess("the Secret's certificate is served and its ca.crt advertised", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			serial := putExternalTLSSecret(ctx, t, cfg, ca, generated.Endpoint)
			want := base64.StdEncoding.EncodeToString(ca.Bundle())
			s := waitForProxyStrategy(ctx, t, cfg, func(s configv1alpha1.CredentialIssuerStrategy) bool {
				return s.Reason == configv1alpha1.StrategyReasonListening && s.Frontend != nil &&
					s.Frontend.ImpersonationProxyInfo != nil && s.Frontend.ImpersonationProxyInfo.CertificateAuthorityData == want
			})
			proxy := *s.Frontend.ImpersonationProxyInfo
			if proxy.Endpoint != generated.Endpoint {
				t.Errorf("endpoint %q, want the load balancer's %q still", proxy.Endpoint, generated.Endpoint)
			}
			waitForServedCertificate(ctx, t, proxy.Endpoint, ca, serial)
			// A client that trusts nothing but the test's CA logs in and works through the proxy.
			resp := proxyExchange(ctx, t, proxy, "pinny:correct horse")
			if resp.Status.Credential == nil {
				t.Fatalf("no credential through the proxy's external certificate; message %v", resp.Status.Message)
			}
			out, err := steps.Kubectl(ctx, proxyKubeconfig(t, cfg, proxy, resp.Status.Credential), "", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
			if err != nil || out != "pinny" {
				t.Errorf("kubectl auth whoami through the proxy trusting only the external CA: %q, %v", out, err)
			}
			return ctx
		}).
		Assess("a renewed certificate is served without a restart", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			serial := putExternalTLSSecret(ctx, t, cfg, ca, generated.Endpoint)
			waitForServedCertificate(ctx, t, generated.Endpoint, ca, serial)
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := restore(ctx); err != nil {
				t.Fatalf("restoring the CredentialIssuer's impersonation proxy spec: %v", err)
			}
			// The generated serving CA was kept, so kubeconfigs made before still trust the proxy.
			waitForProxyStrategy(ctx, t, cfg, func(s configv1alpha1.CredentialIssuerStrategy) bool {
				return s.Reason == configv1alpha1.StrategyReasonListening && s.Frontend != nil &&
					s.Frontend.ImpersonationProxyInfo != nil && *s.Frontend.ImpersonationProxyInfo == generated
			})
			// The CredentialIssuer can say so a moment before every replica serves it again.
			generatedCA, err := base64.StdEncoding.DecodeString(generated.CertificateAuthorityData)
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(generatedCA)
			waitForServing(ctx, t, generated.Endpoint, roots, "")
			resp := proxyExchange(ctx, t, generated, "pinny:correct horse")
			if resp.Status.Credential == nil {
				t.Errorf("no credential through the proxy's generated certificate again; message %v", resp.Status.Message)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// putExternalTLSSecret creates or replaces the external TLS Secret with a new serving certificate
// from ca for the host of endpoint, with ca.crt, and returns the certificate's serial number.
func putExternalTLSSecret(ctx context.Context, t *testing.T, cfg *envconf.Config, ca *certauthority.CA, endpoint string) string {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var dnsNames []string
	var ips []net.IP
	if ip := net.ParseIP(u.Hostname()); ip != nil {
		ips = []net.IP{ip}
	} else {
		dnsNames = []string{u.Hostname()}
	}
	certPEM, keyPEM, err := ca.IssueServingCert(u.Hostname(), dnsNames, ips, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: externalTLSSecretName, Namespace: underTest(ctx).Concierge.Namespace},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": ca.Bundle()},
	}
	secrets := kubeClient(t, cfg).CoreV1().Secrets(underTest(ctx).Concierge.Namespace)
	if existing, err := secrets.Get(ctx, secret.Name, metav1.GetOptions{}); err == nil {
		existing.Data = secret.Data
		_, err = secrets.Update(ctx, existing, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	} else if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return parseCert(t, string(certPEM)).SerialNumber.String()
}

// waitForServedCertificate waits until every one of several handshakes with endpoint, trusting
// only ca, gets the certificate of serial: the load balancer spreads them over both replicas.
func waitForServedCertificate(ctx context.Context, t *testing.T, endpoint string, ca *certauthority.CA, serial string) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	waitForServing(ctx, t, endpoint, roots, serial)
}

// waitForServing waits until every one of several handshakes with endpoint verifies against
// roots and, when serial is not empty, gets the certificate of serial.
func waitForServing(ctx context.Context, t *testing.T, endpoint string, roots *x509.CertPool, serial string) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	address := u.Host
	if u.Port() == "" {
		address = net.JoinHostPort(u.Hostname(), "443")
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for range 6 {
			conn, err := (&tls.Dialer{Config: &tls.Config{RootCAs: roots}}).DialContext(ctx, "tcp", address)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			got := conn.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.String()
			_ = conn.Close()
			if serial != "" && got != serial {
				last = "served the certificate with serial " + got
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the proxy at %s does not serve the expected certificate %s: %s", address, serial, last)
	}
}

// waitForProxyStrategy waits until the ImpersonationProxy strategy satisfies ok and returns it.
func waitForProxyStrategy(ctx context.Context, t *testing.T, cfg *envconf.Config, ok func(configv1alpha1.CredentialIssuerStrategy) bool) configv1alpha1.CredentialIssuerStrategy {
	t.Helper()
	client := conciergeClient(t, cfg)
	var last configv1alpha1.CredentialIssuerStrategy
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ci, err := client.ConfigV1alpha1().CredentialIssuers().Get(ctx, underTest(ctx).CredentialIssuer, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, s := range ci.Status.Strategies {
			if s.Type == configv1alpha1.StrategyTypeImpersonationProxy {
				last = s
				return ok(s), nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the ImpersonationProxy strategy never reached the expected state; last %+v", last)
	}
	return last
}
