package conformance

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	"sealion.dev/e2e/steps"
	"sealion.dev/providers/existing"
)

// csrLabel marks the CertificateSigningRequests the Concierge makes; the only ones it approves are
// those it made (label, requestor and request bytes alike).
const csrLabel = "concierge.sealion.dev/token-credential-request"

// kubeAPIServerClientSigner is the signer the strategy asks.
const kubeAPIServerClientSigner = "kubernetes.io/kube-apiserver-client"

// TestCertificateSigningRequestStrategy enables the CertificateSigningRequest strategy and checks
// that the CredentialIssuer says what the cluster allows: where its kube-apiserver-client signer
// works and clients reach the TokenCredentialRequest API with no credential, the strategy serves
// (the kube cert agent stands down, exchanges and `pinniped get kubeconfig` get certificates of
// the cluster's CA that the API server accepts, the requests are deleted, and a look-alike request
// of another user is left alone); elsewhere it names the reason and another strategy serves. The
// CredentialIssuer seen while it is enabled is saved for the matrix's report. The mode is put back
// at the end, and the cluster's usual strategy waited for.
func TestCertificateSigningRequestStrategy(t *testing.T) {
	skipIfInstalled(t, "changes the CredentialIssuer's spec.certificateSigningRequest.mode")
	var restore func(context.Context) error
	var entry configv1alpha1.CredentialIssuerStrategy
	f := features.New("CertificateSigningRequest strategy").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			setUpLocalUsers(ctx, t, cfg)
			if steps.ClusterFrom(ctx).Info.KubeControllerManagerPod {
				// The agent runs before it is asked to stand down.
				waitForStrategy(ctx, t, cfg, configv1alpha1.StrategyTypeKubeClusterSigningCertificate)
				if n := len(agentPods(ctx, t, cfg)); n == 0 {
					t.Fatal("the kube cert agent serves, yet no agent pod is listed: the test would see none after standing down either")
				}
			}
			restore = setCertificateSigningRequestMode(ctx, t, cfg, configv1alpha1.CertificateSigningRequestModeEnabled)
			return ctx
		}).
		Assess("the CredentialIssuer reports what the cluster allows", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			want, known := expectedCertificateSigningRequestEntry(ctx, t, cfg)
			// A signer that never signs is given ten seconds per probe, and the probe is retried.
			entry = strategyOfTypeWhen(ctx, t, cfg, configv1alpha1.StrategyTypeCertificateSigningRequest, func(s configv1alpha1.CredentialIssuerStrategy) bool {
				if known {
					return s.Status == want.Status && s.Reason == want.Reason
				}
				return s.Reason != configv1alpha1.StrategyReasonErrorDuringSetup
			})
			if _, err := steps.SaveCredentialIssuersTo(os.Getenv("SEALION_E2E_LOGS"), steps.CredentialIssuersCSREnabledFile)(ctx, cfg); err != nil {
				t.Error(err)
			}
			if known && (entry.Status != want.Status || entry.Reason != want.Reason) {
				t.Fatalf("the strategy says %s/%s (%s), want %s/%s on this cluster", entry.Status, entry.Reason, entry.Message, want.Status, want.Reason)
			}
			if !issues(entry) {
				// The fallback: the cluster's other strategy still serves.
				other := waitForStrategy(ctx, t, cfg, "")
				t.Logf("the strategy does not serve here (%s: %s); %s serves instead", entry.Reason, entry.Message, other.Type)
				if other.Type == configv1alpha1.StrategyTypeCertificateSigningRequest {
					t.Errorf("the strategy is listed as working although it said %s", entry.Reason)
				}
				return ctx
			}
			if entry.Reason == configv1alpha1.StrategyReasonCouldNotGetClusterInfo {
				t.Logf("the strategy issues, but cannot tell clients the API server's address: %s", entry.Message)
				return ctx
			}
			fe := entry.Frontend
			if fe == nil || fe.Type != configv1alpha1.FrontendTypeTokenCredentialRequestAPI || fe.TokenCredentialRequestAPIInfo == nil ||
				!strings.HasPrefix(fe.TokenCredentialRequestAPIInfo.Server, "https://") || fe.TokenCredentialRequestAPIInfo.CertificateAuthorityData == "" {
				t.Errorf("frontend %+v, want the TokenCredentialRequest API with server and CA", fe)
			}
			return ctx
		}).
		Assess("the kube cert agent stands down", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !steps.ClusterFrom(ctx).Info.KubeControllerManagerPod {
				t.Skip("no kube cert agent runs on this cluster")
			}
			agent := strategyWhen(ctx, t, cfg, func(s configv1alpha1.CredentialIssuerStrategy) bool {
				return s.Reason == configv1alpha1.StrategyReasonDisabled
			})
			if agent.Status != configv1alpha1.StrategyStatusError || agent.Reason != configv1alpha1.StrategyReasonDisabled {
				t.Errorf("the kube cert agent's entry %+v, want Error/Disabled", agent)
			}
			var left []corev1.Pod
			err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				left = agentPods(ctx, t, cfg)
				return len(left) == 0, nil
			})
			if err != nil {
				t.Errorf("agent pods still run with the strategy enabled: %d", len(left))
			}
			return ctx
		}).
		Assess("exchanges get certificates of the cluster's CA, through requests deleted after", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !issues(entry) {
				t.Skipf("the strategy does not serve here: %s", entry.Reason)
			}
			csrs := kubeClient(t, cfg).CertificatesV1().CertificateSigningRequests()
			lookAlike := lookAlikeRequest(t)
			lookAlike, err := csrs.Create(ctx, lookAlike, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = csrs.Delete(context.WithoutCancel(ctx), lookAlike.Name, metav1.DeleteOptions{}) }()

			tcr := kubectlExchange(ctx, t, cfg, "pinny:correct horse", "WebhookAuthenticator", "local-users")
			cred := tcr.Status.Credential
			if cred == nil {
				t.Fatalf("no credential: %v", ptrOr(tcr.Status.Message))
			}
			leaf := clusterSigned(t, cfg, cred.ClientCertificateData)
			if leaf.Subject.CommonName != "pinny" || !slices.Contains(leaf.Subject.Organization, "seals") {
				t.Errorf("certificate subject %v, want pinny in seals", leaf.Subject)
			}
			// The shortest lifetime the API allows (expirationSeconds 600), and what the response
			// says. kube-controller-manager backdates NotBefore for clock skew; NotAfter is what counts.
			if left := time.Until(leaf.NotAfter); left > 10*time.Minute+time.Minute || left < 9*time.Minute {
				t.Errorf("the certificate expires in %s, want about the 10 minutes requested", left)
			}
			if !cred.ExpirationTimestamp.Time.Equal(leaf.NotAfter) {
				t.Errorf("expirationTimestamp %s, certificate notAfter %s", cred.ExpirationTimestamp.Time, leaf.NotAfter)
			}
			if out, err := kubectlWithCertErr(ctx, cfg, cred, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); err != nil || out != "pinny" {
				t.Errorf("the API server sees %q (%v), want pinny", out, err)
			}

			var ours []string
			err = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				list, err := csrs.List(ctx, metav1.ListOptions{LabelSelector: csrLabel})
				if err != nil {
					return false, nil
				}
				ours = nil
				for _, c := range list.Items {
					if c.Name != lookAlike.Name {
						ours = append(ours, c.Name)
					}
				}
				return len(ours) == 0, nil
			})
			if err != nil {
				t.Errorf("the Concierge's requests were not deleted: %v", ours)
			}
			got, err := csrs.Get(ctx, lookAlike.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("another user's look-alike request: %v", err)
			}
			if len(got.Status.Conditions) != 0 || len(got.Status.Certificate) != 0 {
				t.Errorf("another user's request with the Concierge's label was acted on: %+v", got.Status)
			}
			return ctx
		}).
		Assess("pinniped get kubeconfig and login static use it unchanged", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !issues(entry) {
				t.Skipf("the strategy does not serve here: %s", entry.Reason)
			}
			bindGroup(ctx, t, cfg, "e2e-csr-seals", "seals")
			flags := []string{"--static-token", "pinny:correct horse", "--concierge-authenticator-type", "webhook", "--concierge-authenticator-name", "local-users"}
			if entry.Reason == configv1alpha1.StrategyReasonCouldNotGetClusterInfo {
				// As the entry's message says: the admin kubeconfig's API server and CA.
				flags = append(flags, "--concierge-mode", "TokenCredentialRequestAPI")
			}
			user := cliUserFromFlags(ctx, t, cfg, flags...)
			eventually(ctx, t, func() error { _, err := user.kubectl(ctx, "get", "pods", "-n", "kube-system"); return err })
			certs := user.cachedCertificates(t)
			if len(certs) != 1 {
				t.Fatalf("%d cached credentials, want 1", len(certs))
			}
			clusterSigned(t, cfg, certs[0])
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if restore == nil {
				return ctx
			}
			if err := restore(ctx); err != nil {
				t.Fatalf("restoring the CredentialIssuer's mode: %v", err)
			}
			// The cluster's usual strategy serves again before the next test.
			if steps.ClusterFrom(ctx).Info.KubeControllerManagerPod {
				if s := strategyWhen(ctx, t, cfg, func(s configv1alpha1.CredentialIssuerStrategy) bool {
					return s.Status == configv1alpha1.StrategyStatusSuccess
				}); s.Status != configv1alpha1.StrategyStatusSuccess {
					t.Errorf("the kube cert agent did not serve again: %+v", s)
				}
			}
			waitForStrategy(ctx, t, cfg, "")
			// Back in auto mode, a cluster where another strategy serves lists Pinniped's entries only.
			client := conciergeClient(t, cfg)
			var last []configv1alpha1.CredentialIssuerStrategy
			if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
				ci, err := client.ConfigV1alpha1().CredentialIssuers().Get(ctx, underTest(ctx).CredentialIssuer, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				if spec := ci.Spec.CertificateSigningRequest; spec != nil && spec.Mode != configv1alpha1.CertificateSigningRequestModeAuto {
					return true, nil // the cluster had its own mode before the test
				}
				last = ci.Status.Strategies
				return !slices.ContainsFunc(last, func(s configv1alpha1.CredentialIssuerStrategy) bool {
					return s.Type == configv1alpha1.StrategyTypeCertificateSigningRequest
				}), nil
			}); err != nil {
				t.Errorf("the strategy's entry outlived auto mode where another strategy serves: %+v", last)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// agentPods lists the kube cert agent's pods, those terminating included.
func agentPods(ctx context.Context, t *testing.T, cfg *envconf.Config) []corev1.Pod {
	t.Helper()
	list, err := kubeClient(t, cfg).CoreV1().Pods(underTest(ctx).Concierge.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "kube-cert-agent.pinniped.dev"})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// issues reports whether an entry of the strategy says certificates are issued through it: it
// works, or only the address for clients (kube-public/cluster-info) is missing.
func issues(s configv1alpha1.CredentialIssuerStrategy) bool {
	return s.Status == configv1alpha1.StrategyStatusSuccess || s.Reason == configv1alpha1.StrategyReasonCouldNotGetClusterInfo
}

// expectedCertificateSigningRequestEntry is the entry the strategy should report, enabled, on this
// cluster, and whether that is known (not for an existing cluster of the generic profile).
func expectedCertificateSigningRequestEntry(ctx context.Context, t *testing.T, cfg *envconf.Config) (configv1alpha1.CredentialIssuerStrategy, bool) {
	t.Helper()
	c := steps.ClusterFrom(ctx)
	if c.Info.Name == existing.Name {
		if p, err := existing.LookupProfile(os.Getenv(existing.ProfileEnv)); err != nil || p.Generic() {
			return configv1alpha1.CredentialIssuerStrategy{}, false
		}
	}
	switch {
	case !c.Info.AnonymousAuthEnabled:
		return configv1alpha1.CredentialIssuerStrategy{Status: configv1alpha1.StrategyStatusError, Reason: configv1alpha1.StrategyReasonAnonymousRequestsRefused}, true
	case !c.Info.KubeAPIServerClientSigner:
		return configv1alpha1.CredentialIssuerStrategy{Status: configv1alpha1.StrategyStatusError, Reason: configv1alpha1.StrategyReasonSignerNotServed}, true
	}
	// Clusters not built by kubeadm (the managed ones here) have no kube-public/cluster-info.
	if _, err := kubeClient(t, cfg).CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return configv1alpha1.CredentialIssuerStrategy{Status: configv1alpha1.StrategyStatusError, Reason: configv1alpha1.StrategyReasonCouldNotGetClusterInfo}, true
	} else if err != nil {
		t.Fatal(err)
	}
	return configv1alpha1.CredentialIssuerStrategy{Status: configv1alpha1.StrategyStatusSuccess, Reason: configv1alpha1.StrategyReasonSignerAvailable}, true
}

// setCertificateSigningRequestMode sets the CredentialIssuer's spec.certificateSigningRequest and
// returns a function that puts the previous one back.
func setCertificateSigningRequestMode(ctx context.Context, t *testing.T, cfg *envconf.Config, mode configv1alpha1.CertificateSigningRequestMode) func(context.Context) error {
	t.Helper()
	cis := conciergeClient(t, cfg).ConfigV1alpha1().CredentialIssuers()
	var previous *configv1alpha1.CertificateSigningRequestSpec
	set := func(ctx context.Context, spec *configv1alpha1.CertificateSigningRequestSpec, keep bool) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			ci, err := cis.Get(ctx, underTest(ctx).CredentialIssuer, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if keep {
				previous = ci.Spec.CertificateSigningRequest.DeepCopy()
			}
			ci.Spec.CertificateSigningRequest = spec
			_, err = cis.Update(ctx, ci, metav1.UpdateOptions{})
			return err
		})
	}
	if err := set(ctx, &configv1alpha1.CertificateSigningRequestSpec{Mode: mode}, true); err != nil {
		t.Fatalf("setting the CredentialIssuer's spec.certificateSigningRequest.mode: %v", err)
	}
	return func(ctx context.Context) error { return set(ctx, previous, false) }
}

// lookAlikeRequest is a request of the admin's for the signer, with the Concierge's label: the
// attack of a user who may create requests and hopes the Concierge approves them.
func lookAlikeRequest(t *testing.T) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := keyutil.ParsePrivateKeyPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	csrPEM, err := cert.MakeCSR(signer, &pkix.Name{CommonName: "mallory", Organization: []string{"seals"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-look-alike-", Labels: map[string]string{csrLabel: ""}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: csrPEM, SignerName: kubeAPIServerClientSigner, ExpirationSeconds: ptr.To(int32(600)),
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
}

// clusterSigned parses a PEM client certificate and checks that the cluster's CA (the admin
// kubeconfig's) signed it for client authentication.
func clusterSigned(t *testing.T, cfg *envconf.Config, certPEM string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil {
		t.Fatal("the credential holds no PEM certificate")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := clientcmd.LoadFromFile(cfg.KubeconfigFile())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster].CertificateAuthorityData) {
		t.Fatal("the admin kubeconfig has no CA")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the certificate (issuer %s) is not the cluster CA's: %v", leaf.Issuer, err)
	}
	return leaf
}

func ptrOr(s *string) string {
	if s == nil {
		return "(no message)"
	}
	return *s
}
