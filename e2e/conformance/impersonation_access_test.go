package conformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	"sealion.dev/core/testing/rawhttp"
	"sealion.dev/e2e/steps"
	"sealion.dev/providers"
)

// originalUserInfoExtra is the user extra by which the proxy tells the kube-apiserver who asked
// for a nested impersonation (Pinniped's name, written out to check the wire format).
const originalUserInfoExtra = "original-user-info.impersonation-proxy.concierge.pinniped.dev"

// TestImpersonationProxyAccess checks, where mode auto runs the proxy at a load balancer, what
// people and programs do through it: kubectl apply and delete as a certificate's user within
// RBAC, kubectl --as for a user allowed to impersonate (the kube-apiserver then learns who asked),
// a Connection header naming the proxy's Impersonate headers (which must not strip them), and a
// ServiceAccount's token, which acts as that ServiceAccount.
func TestImpersonationProxyAccess(t *testing.T) {
	var proxy configv1alpha1.ImpersonationProxyInfo
	var cred *loginv1alpha1.ClusterCredential
	var ns string
	f := features.New("kubectl through the ImpersonationProxy").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			skipUnlessProxyServes(ctx, t)
			setUpLocalUsers(ctx, t, cfg)
			proxy = listeningProxy(ctx, t, cfg)
			resp := proxyExchange(ctx, t, proxy, "pinny:correct horse")
			if resp.Status.Credential == nil {
				t.Fatalf("no credential; message %v", resp.Status.Message)
			}
			cred = resp.Status.Credential
			ns = createTestNamespace(ctx, t, cfg, "e2e-proxy-access-")
			createRoleBinding(ctx, t, cfg, ns, "pinny-edit", "edit", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "pinny"})
			return ctx
		}).
		Assess("kubectl apply (client- and server-side) and delete", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kubeconfig := proxyKubeconfig(t, cfg, proxy, cred)
			// RBAC takes a moment to see a new binding.
			retryUntilOK(ctx, t, "applying a ConfigMap and a Deployment through the proxy", func() error {
				_, err := steps.Kubectl(ctx, kubeconfig, sleeperManifest(ns, "hello", steps.Image(ctx, steps.ServerImage)), "apply", "-f", "-")
				return err
			})
			if _, err := steps.Kubectl(ctx, kubeconfig, sleeperManifest(ns, "hello again", steps.Image(ctx, steps.ServerImage)), "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
				t.Fatalf("server-side apply through the proxy: %v", err)
			}
			// rollout status watches the Deployment through the proxy until its pod is ready.
			if _, err := steps.Kubectl(ctx, kubeconfig, "", "rollout", "status", "-n", ns, "deployment/e2e-sleeper", "--timeout=2m"); err != nil {
				t.Fatalf("the Deployment applied through the proxy never rolled out: %v", err)
			}
			kube := kubeClient(t, cfg)
			cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "e2e-greeting", metav1.GetOptions{})
			if err != nil || cm.Data["greeting"] != "hello again" {
				t.Fatalf("the ConfigMap as applied through the proxy: %v, %v", cm.Data, err)
			}
			if _, err := steps.Kubectl(ctx, kubeconfig, sleeperManifest(ns, "hello again", steps.Image(ctx, steps.ServerImage)), "delete", "--wait=true", "-f", "-"); err != nil {
				t.Fatalf("kubectl delete through the proxy: %v", err)
			}
			if _, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "e2e-greeting", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the ConfigMap outlived kubectl delete through the proxy: %v", err)
			}
			if _, err := kube.AppsV1().Deployments(ns).Get(ctx, "e2e-sleeper", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the Deployment outlived kubectl delete through the proxy: %v", err)
			}
			return ctx
		}).
		Assess("kubectl --as with the right to impersonate acts as the other user", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kube := kubeClient(t, cfg)
			role := &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-impersonate-alice-"},
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"alice"}},
					{APIGroups: []string{""}, Resources: []string{"groups"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"devs"}},
				},
			}
			role, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			binding := &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role.Name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "pinny"}},
			}
			if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx := context.WithoutCancel(ctx)
				_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, role.Name, metav1.DeleteOptions{})
				_ = kube.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
			})
			createRoleBinding(ctx, t, cfg, ns, "devs-view", "view", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "devs"})
			if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "for-devs"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}

			kubeconfig := proxyKubeconfig(t, cfg, proxy, cred)
			var review authenticationv1.SelfSubjectReview
			retryUntilOK(ctx, t, "kubectl auth whoami --as=alice --as-group=devs through the proxy", func() error {
				out, err := steps.Kubectl(ctx, kubeconfig, "", "auth", "whoami", "--as=alice", "--as-group=devs", "-o", "json")
				if err != nil {
					return err
				}
				return json.Unmarshal([]byte(out), &review)
			})
			who := review.Status.UserInfo
			if who.Username != "alice" || !slices.Contains(who.Groups, "devs") || !slices.Contains(who.Groups, "system:authenticated") {
				t.Errorf("the kube-apiserver sees %+v, want alice in devs", who)
			}
			original := who.Extra[originalUserInfoExtra]
			var asker authenticationv1.UserInfo
			if len(original) != 1 || json.Unmarshal([]byte(original[0]), &asker) != nil {
				t.Fatalf("extra %s = %q, want the JSON of the user who asked", originalUserInfoExtra, original)
			}
			if asker.Username != "pinny" || !slices.Contains(asker.Groups, "seals") || !slices.Contains(asker.Groups, "walruses") {
				t.Errorf("the original user recorded is %+v, want pinny in seals and walruses", asker)
			}

			// alice in devs may read the namespace; alice alone may not, though pinny, who asks, may.
			if _, err := steps.Kubectl(ctx, kubeconfig, "", "get", "configmap", "for-devs", "-n", ns, "--as=alice", "--as-group=devs"); err != nil {
				t.Errorf("reading as alice in devs through the proxy: %v", err)
			}
			if _, err := steps.Kubectl(ctx, kubeconfig, "", "get", "configmap", "for-devs", "-n", ns, "--as=alice"); err == nil || !strings.Contains(err.Error(), `User "alice" cannot get`) {
				t.Errorf("reading as alice outside devs: got %v, want alice forbidden", err)
			}
			// --raw shows the proxy's refusal, which kubectl's discovery would turn into "unknown".
			if _, err := steps.Kubectl(ctx, kubeconfig, "", "get", "--raw", "/api/v1/namespaces/"+ns+"/configmaps", "--as=bob"); err == nil || !strings.Contains(err.Error(), `User "pinny" cannot impersonate resource "users"`) {
				t.Errorf("impersonating bob, whom pinny may not impersonate: got %v, want Forbidden", err)
			}
			return ctx
		}).
		Assess("a client naming the Impersonate headers in Connection is still itself", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The attack of SECURITY.md's first advisory: with a Connection header naming the
			// headers the proxy sets, a reverse proxy that honours Connection after setting them
			// sends the request as the proxy's ServiceAccount. The kube-apiserver must see pinny,
			// or the request be refused, over HTTP/1.1 and HTTP/2.
			tlsConfig, addr := proxyClientTLS(t, proxy, cred)
			options := []string{
				"Impersonate-User, Impersonate-Group",
				"impersonate-user, impersonate-group, impersonate-extra-authentication.kubernetes.io%2fcredential-id, impersonate-extra-" + originalUserInfoExtra,
				"IMPERSONATE-USER, IMPERSONATE-GROUP, IMPERSONATE-UID",
			}
			body := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
			for _, option := range options {
				for _, h2 := range []bool{false, true} {
					send, name := rawhttp.HTTP1, "Connection"
					if h2 {
						send, name = rawhttp.HTTP2, "connection"
					}
					resp, err := send(ctx, addr, tlsConfig, rawhttp.Request{Method: http.MethodPost, Target: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
						Headers: [][2]string{{"Content-Type", "application/json"}, {name, option}}, Body: body})
					if err != nil {
						t.Fatalf("%s: %s (HTTP/2 %v): %v", name, option, h2, err)
					}
					if resp.Reset != "" || resp.Status == http.StatusBadRequest {
						continue // refused: HTTP/2 forbids connection-specific headers
					}
					var review authenticationv1.SelfSubjectReview
					if resp.Status != http.StatusCreated || json.Unmarshal(resp.Body, &review) != nil {
						t.Errorf("%s: %s (HTTP/2 %v): %d %s", name, option, h2, resp.Status, resp.Body)
						continue
					}
					if who := review.Status.UserInfo; who.Username != "pinny" || !slices.Contains(who.Groups, "seals") {
						t.Errorf("%s: %s (HTTP/2 %v): the kube-apiserver saw %+v, want pinny in seals", name, option, h2, who)
					}
				}
			}
			return ctx
		}).
		Assess("a ServiceAccount token acts as the ServiceAccount", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kube := kubeClient(t, cfg)
			sa, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "e2e-robot"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			createRoleBinding(ctx, t, cfg, ns, "robot-view", "view", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns})
			// The token a pod's projected volume holds: bound to the ServiceAccount, for the kube-apiserver.
			tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			kubeconfig := proxyTokenKubeconfig(t, proxy, tr.Status.Token)
			var review authenticationv1.SelfSubjectReview
			retryUntilOK(ctx, t, "kubectl auth whoami with the ServiceAccount's token through the proxy", func() error {
				out, err := steps.Kubectl(ctx, kubeconfig, "", "auth", "whoami", "-o", "json")
				if err != nil {
					return err
				}
				return json.Unmarshal([]byte(out), &review)
			})
			who := review.Status.UserInfo
			if who.Username != "system:serviceaccount:"+ns+":e2e-robot" || who.UID != string(sa.UID) || !slices.Contains(who.Groups, "system:serviceaccounts:"+ns) {
				t.Errorf("the kube-apiserver sees %+v, want the ServiceAccount %s/e2e-robot (uid %s)", who, ns, sa.UID)
			}
			if _, ok := who.Extra[originalUserInfoExtra]; ok {
				t.Errorf("a request without --as records an original user: %v", who.Extra)
			}
			retryUntilOK(ctx, t, "listing ConfigMaps with the ServiceAccount's view role", func() error {
				_, err := steps.Kubectl(ctx, kubeconfig, "", "get", "configmaps", "-n", ns)
				return err
			})
			if _, err := steps.Kubectl(ctx, kubeconfig, "", "get", "configmaps", "-n", "kube-system"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
				t.Errorf("reading another namespace with the ServiceAccount's token: got %v, want Forbidden", err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// proxyClientTLS is the TLS configuration of a client of the proxy with cred's certificate, and
// the proxy's host:port.
func proxyClientTLS(t *testing.T, proxy configv1alpha1.ImpersonationProxyInfo, cred *loginv1alpha1.ClusterCredential) (*tls.Config, string) {
	t.Helper()
	ca, err := base64.StdEncoding.DecodeString(proxy.CertificateAuthorityData)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("the advertised CA holds no certificate")
	}
	cert, err := tls.X509KeyPair([]byte(cred.ClientCertificateData), []byte(cred.ClientKeyData))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(proxy.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}, addr
}

// skipUnlessProxyServes skips where the Concierge, as the suite installs it, issues credentials
// without its impersonation proxy.
func skipUnlessProxyServes(ctx context.Context, t *testing.T) {
	t.Helper()
	if !proxyServes(steps.ClusterFrom(ctx).Info) {
		t.Skip("the cluster's signing key is reachable, or nothing (load balancer, Ingress) reaches the proxy from this machine: the Concierge does without the proxy here")
	}
}

// proxyServes says whether the Concierge, as the suite installs it, issues credentials through its
// impersonation proxy: where no signing key is reachable and the proxy can be reached from this
// machine, through a load balancer (mode auto, where the control plane is hidden) or through an
// Ingress (mode enabled with an external endpoint, as on Talos).
func proxyServes(info providers.Info) bool {
	return !info.ClusterSigningKeyAvailable && (info.HasExternalLoadBalancer || info.IngressTLSPassthrough)
}

// listeningProxy waits for the ImpersonationProxy strategy to succeed and returns its frontend.
func listeningProxy(ctx context.Context, t *testing.T, cfg *envconf.Config) configv1alpha1.ImpersonationProxyInfo {
	t.Helper()
	s := waitForStrategy(ctx, t, cfg, configv1alpha1.StrategyTypeImpersonationProxy)
	if s.Reason != configv1alpha1.StrategyReasonListening || s.Frontend == nil || s.Frontend.ImpersonationProxyInfo == nil {
		t.Fatalf("strategy %+v, want Listening with the proxy's endpoint", s)
	}
	return *s.Frontend.ImpersonationProxyInfo
}

// createTestNamespace creates a namespace that is deleted when the test ends.
func createTestNamespace(ctx context.Context, t *testing.T, cfg *envconf.Config, prefix string) string {
	t.Helper()
	kube := kubeClient(t, cfg)
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns.Name, metav1.DeleteOptions{})
	})
	// Pods of a new namespace need its default ServiceAccount.
	retryUntilOK(ctx, t, "the namespace's default ServiceAccount", func() error {
		_, err := kube.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	return ns.Name
}

// createRoleBinding binds the ClusterRole role to subject in ns.
func createRoleBinding(ctx context.Context, t *testing.T, cfg *envconf.Config, ns, name, role string, subject rbacv1.Subject) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := kubeClient(t, cfg).RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// retryUntilOK retries f for up to a minute: RBAC changes, and the proxy's cached denials, take a
// few seconds to pass.
func retryUntilOK(ctx context.Context, t *testing.T, what string, f func() error) {
	t.Helper()
	var last error
	if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(context.Context) (bool, error) {
		last = f()
		return last == nil, nil
	}); err != nil {
		t.Fatalf("%s: %v", what, last)
	}
}

// sleeperManifest is a ConfigMap with greeting and a Deployment of one pod of image that sleeps,
// in ns.
func sleeperManifest(ns, greeting, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: e2e-greeting, namespace: %[1]s}
data: {greeting: %[2]q}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: e2e-sleeper, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: e2e-sleeper}}
  template:
    metadata: {labels: {app: e2e-sleeper}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 65532}
      terminationGracePeriodSeconds: 1
      containers:
        - name: sleeper
          image: %[3]s
          imagePullPolicy: IfNotPresent
          command: [/usr/local/bin/pinniped-concierge-kube-cert-agent, sleep]
`, ns, greeting, image)
}

// proxyTokenKubeconfig writes a kubeconfig that reaches the cluster through the proxy with a
// bearer token, as a pod's in-cluster configuration would.
func proxyTokenKubeconfig(t *testing.T, proxy configv1alpha1.ImpersonationProxyInfo, token string) string {
	t.Helper()
	ca, err := base64.StdEncoding.DecodeString(proxy.CertificateAuthorityData)
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: proxy.Endpoint, CertificateAuthorityData: ca}
	kc.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "token"}
	kc.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
