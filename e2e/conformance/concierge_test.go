package conformance

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	"sealion.dev/e2e/steps"
)

// TestInstalled checks that the Concierge runs as installed: its replicas ready (both of ours)
// and its APIs available through the aggregation layer.
func TestInstalled(t *testing.T) {
	f := features.New("Concierge installed").
		Assess("its replicas are ready", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kube := kubeClient(t, cfg)
			d, err := kube.AppsV1().Deployments(underTest(ctx).Concierge.Namespace).Get(ctx, underTest(ctx).Concierge.Deployment, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Our install YAMLs ask for two; a user's installation for what it asks.
			want := int32(2)
			if underTest(ctx).Discovered && d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			if d.Status.ReadyReplicas != want || want == 0 || !available(d) {
				t.Errorf("deployment has %d ready replicas of %d, conditions %+v", d.Status.ReadyReplicas, want, d.Status.Conditions)
			}
			return ctx
		}).
		Assess("the APIServices are available", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, group := range []string{"login.concierge.pinniped.dev", "identity.concierge.pinniped.dev"} {
				name := "v1alpha1." + underTest(ctx).Group(group)
				out, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "get", "apiservice", name,
					"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
				if err != nil || out != "True" {
					t.Errorf("APIService %s Available=%q (%v)", name, out, err)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestTokenCredentialRequestWithLocalUsers exchanges a local-user-authenticator token with
// `kubectl create -f -` through the real aggregation layer.
func TestTokenCredentialRequestWithLocalUsers(t *testing.T) {
	f := features.New("TokenCredentialRequest with a webhook authenticator").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			setUpLocalUsers(ctx, t, cfg)
			return ctx
		}).
		Assess("the right password gets a certificate for the user", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if proxyServes(steps.ClusterFrom(ctx).Info) {
				// The proxy's signer exists once the proxy is set up.
				waitForStrategy(ctx, t, cfg, configv1alpha1.StrategyTypeImpersonationProxy)
			}
			resp := kubectlExchange(ctx, t, cfg, "pinny:correct horse", "WebhookAuthenticator", "local-users")
			if resp.Status.Credential == nil {
				t.Fatalf("no credential; message %v", resp.Status.Message)
			}
			cert := parseCert(t, resp.Status.Credential.ClientCertificateData)
			if cert.Subject.CommonName != "pinny" || fmt.Sprint(cert.Subject.Organization) != "[seals walruses]" {
				t.Errorf("certificate subject %v", cert.Subject)
			}
			if steps.ClusterFrom(ctx).Info.ClusterSigningKeyAvailable {
				// Signed with the cluster's key: the kube-apiserver itself accepts it.
				out := kubectlWithCert(ctx, t, cfg, resp.Status.Credential, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
				if out != "pinny [seals walruses system:authenticated]" && out != `pinny ["seals","walruses","system:authenticated"]` {
					t.Errorf("the kube-apiserver sees %q", out)
				}
				return ctx
			}
			roots := x509.NewCertPool()
			roots.AddCert(expectedSigner(ctx, t, cfg))
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("certificate not signed by the expected signer: %v", err)
			}
			return ctx
		}).
		Assess("a wrong password is refused", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			resp := kubectlExchange(ctx, t, cfg, "pinny:battery staple", "WebhookAuthenticator", "local-users")
			if resp.Status.Credential != nil || resp.Status.Message == nil || *resp.Status.Message != "authentication failed" {
				t.Errorf("got %+v, want the uniform authentication failure", resp.Status)
			}
			return ctx
		}).
		Assess("a user the webhook puts in system:masters gets no credential", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The hole this closes: the certificate (or, behind the impersonation proxy, the
			// impersonated identity) would have been cluster-admin.
			createLocalUser(ctx, t, cfg, "mallory", "correct horse", "seals,system:masters", bcrypt.DefaultCost)
			resp := kubectlExchange(ctx, t, cfg, "mallory:correct horse", "WebhookAuthenticator", "local-users")
			if resp.Status.Credential != nil || resp.Status.Message == nil || *resp.Status.Message != "authentication failed" {
				t.Errorf("got %+v, want the uniform authentication failure", resp.Status)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// setUpLocalUsers creates the local user pinny (groups seals, walruses) and the WebhookAuthenticator
// local-users for the local-user-authenticator; several tests share them.
func setUpLocalUsers(ctx context.Context, t *testing.T, cfg *envconf.Config) {
	t.Helper()
	kube := kubeClient(t, cfg)
	createLocalUser(ctx, t, cfg, "pinny", "correct horse", "seals,walruses", bcrypt.DefaultCost)
	// The webhook's CA is published by the local-user-authenticator itself.
	var ca []byte
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := kube.CoreV1().Secrets("local-user-authenticator").Get(ctx, "api-serving-cert", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ca = s.Data["caCertificate"]
		return len(ca) > 0, nil
	}); err != nil {
		t.Fatalf("the local-user-authenticator never published its CA: %v", err)
	}
	_, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), fmt.Sprintf(`apiVersion: authentication.concierge.pinniped.dev/v1alpha1
kind: WebhookAuthenticator
metadata: {name: local-users}
spec:
  endpoint: https://local-user-authenticator.local-user-authenticator.svc/authenticate
  tls: {certificateAuthorityData: %s}
`, base64.StdEncoding.EncodeToString(ca)), "apply", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	waitForWebhookReady(ctx, t, cfg, "local-users")
}

// createLocalUser creates a local-user-authenticator user (groups comma-separated) whose password
// is hashed at the bcrypt cost given, unless it exists.
func createLocalUser(ctx context.Context, t *testing.T, cfg *envconf.Config, name, password, groups string, cost int) {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		t.Fatal(err)
	}
	user := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "local-user-authenticator"},
		Data:       map[string][]byte{"passwordHash": hash, "groups": []byte(groups)},
	}
	if _, err := kubeClient(t, cfg).CoreV1().Secrets("local-user-authenticator").Create(ctx, user, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// expectedSigner is the CA of TokenCredentialRequest certificates where it is not the cluster's:
// the impersonation proxy's signer where the proxy serves, else the test's.
func expectedSigner(ctx context.Context, t *testing.T, cfg *envconf.Config) *x509.Certificate {
	t.Helper()
	if !proxyServes(steps.ClusterFrom(ctx).Info) {
		return signer.Certificate()
	}
	s, err := kubeClient(t, cfg).CoreV1().Secrets(underTest(ctx).Concierge.Namespace).Get(ctx, underTest(ctx).Concierge.Name("impersonation-proxy-signer-ca-certificate"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the impersonation proxy's signer CA: %v", err)
	}
	return parseCert(t, string(s.Data["ca.crt"]))
}

// kubectlExchange creates a TokenCredentialRequest for token with the authenticator of the given
// kind and name, as the admin.
func kubectlExchange(ctx context.Context, t *testing.T, cfg *envconf.Config, token, kind, name string) *loginv1alpha1.TokenCredentialRequest {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"apiVersion": "login.concierge.pinniped.dev/v1alpha1",
		"kind":       "TokenCredentialRequest",
		"spec": map[string]any{
			"token":         token,
			"authenticator": map[string]any{"apiGroup": authv1alpha1.GroupName, "kind": kind, "name": name},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), string(body), "create", "-f", "-", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var resp loginv1alpha1.TokenCredentialRequest
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
	return &resp
}

func waitForWebhookReady(ctx context.Context, t *testing.T, cfg *envconf.Config, name string) {
	t.Helper()
	client, err := conciergeclientset.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	var last authv1alpha1.WebhookAuthenticatorStatus
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		w, err := client.AuthenticationV1alpha1().WebhookAuthenticators().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = w.Status
		return w.Status.Phase == authv1alpha1.PhaseReady, nil
	})
	if err != nil {
		t.Fatalf("WebhookAuthenticator %s not Ready: %+v", name, last)
	}
}

func kubeClient(t *testing.T, cfg *envconf.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func available(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func parseCert(t *testing.T, data string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(data))
	if block == nil {
		t.Fatal("credential holds no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
