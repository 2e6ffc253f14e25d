package conformance

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	"sealion.dev/core/certauthority"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	"sealion.dev/e2e/steps"
)

// TestImpersonationProxy checks, on clusters whose control plane is out of reach but which have a
// load balancer (managed clusters), that the impersonation proxy listens at its load balancer,
// exchanges tokens anonymously, forwards requests as the certificate's user within RBAC, refuses
// bad credentials and forged identity headers, and streams watches, logs, exec and port-forward.
func TestImpersonationProxy(t *testing.T) {
	var proxy configv1alpha1.ImpersonationProxyInfo
	var cred *loginv1alpha1.ClusterCredential
	f := features.New("ImpersonationProxy strategy").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			skipUnlessProxyServes(ctx, t)
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
			ci, err := client.ConfigV1alpha1().CredentialIssuers().Get(ctx, underTest(ctx).CredentialIssuer, metav1.GetOptions{})
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
		}).
		Assess("the proxy refuses bad credentials and forged identity headers", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if cred == nil {
				t.Skip("no credential")
			}
			pinny, err := tls.X509KeyPair([]byte(cred.ClientCertificateData), []byte(cred.ClientKeyData))
			if err != nil {
				t.Fatal(err)
			}
			unknownCA, err := certauthority.New("e2e unknown CA", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			s, err := kubeClient(t, cfg).CoreV1().Secrets(underTest(ctx).Concierge.Namespace).Get(ctx, underTest(ctx).Concierge.Name("impersonation-proxy-signer-ca-certificate"), metav1.GetOptions{})
			if err != nil {
				t.Fatalf("reading the impersonation proxy's signer CA: %v", err)
			}
			// The proxy's own signer, set back in time, issues a certificate that expired 20 minutes ago.
			pastSigner, err := certauthority.Load(s.Data["ca.crt"], s.Data["ca.key"], certauthority.WithClock(func() time.Time { return time.Now().Add(-30 * time.Minute) }))
			if err != nil {
				t.Fatal(err)
			}
			forged := http.Header{}
			forged.Set("Impersonate-User", "system:admin")
			forged.Add("Impersonate-Group", "system:masters")
			frontProxy := http.Header{}
			frontProxy.Set("X-Remote-User", "system:admin")
			frontProxy.Add("X-Remote-Group", "system:masters")
			garbage := http.Header{}
			garbage.Set("Authorization", "Bearer not-a-token-anyone-issued")
			garbageAndForged := forged.Clone()
			garbageAndForged.Set("Authorization", "Bearer not-a-token-anyone-issued")
			// Anonymous requests go on without credentials, so the cluster decides as it would
			// without the proxy: authenticated as system:anonymous and forbidden, or refused outright
			// where anonymous authentication is off (AKS).
			anonymous := http.StatusForbidden
			if !steps.ClusterFrom(ctx).Info.AnonymousAuthEnabled {
				anonymous = http.StatusUnauthorized
			}
			for _, tc := range []struct {
				name   string
				cert   *tls.Certificate
				header http.Header
				want   []int
			}{
				{name: "a certificate from an unknown CA", cert: mintCert(t, unknownCA, "system:admin", []string{"system:masters"}, time.Hour), want: []int{http.StatusUnauthorized}},
				{name: "an expired certificate from the proxy's signer", cert: mintCert(t, pastSigner, "pinny", []string{"system:masters"}, 10*time.Minute), want: []int{http.StatusUnauthorized}},
				{name: "impersonation headers with pinny's certificate", cert: &pinny, header: forged, want: []int{http.StatusForbidden}},
				{name: "front-proxy headers with pinny's certificate", cert: &pinny, header: frontProxy, want: []int{http.StatusForbidden}},
				{name: "no credentials", want: []int{anonymous}},
				{name: "no credentials with impersonation headers", header: forged, want: []int{http.StatusUnauthorized, http.StatusForbidden}},
				{name: "a garbage bearer token", header: garbage, want: []int{http.StatusUnauthorized}},
				{name: "a garbage bearer token with impersonation headers", header: garbageAndForged, want: []int{http.StatusUnauthorized}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					// Listing Secrets is what only someone else (system:masters) may do here.
					status, body := proxyGet(ctx, t, proxy, "/api/v1/namespaces/kube-system/secrets", tc.cert, tc.header)
					if !slices.Contains(tc.want, status) {
						t.Errorf("listing secrets: %d %s, want %v", status, body, tc.want)
					}
				})
			}
			return ctx
		}).
		Assess("watch, logs -f, exec and port-forward stream through the proxy", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if cred == nil {
				t.Skip("no credential")
			}
			testStreamingThroughProxy(ctx, t, cfg, proxy, cred)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// mintCert issues a client certificate with ca and returns it as a TLS certificate.
func mintCert(t *testing.T, ca *certauthority.CA, username string, groups []string, ttl time.Duration) *tls.Certificate {
	t.Helper()
	certPEM, keyPEM, _, err := ca.IssueClientCert(username, groups, nil, ttl)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// proxyGet sends a GET for path to the proxy with an optional client certificate and headers and
// returns the status code and body.
func proxyGet(ctx context.Context, t *testing.T, proxy configv1alpha1.ImpersonationProxyInfo, path string, cert *tls.Certificate, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, proxy.Endpoint+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	client := proxyHTTPClient(t, proxy)
	if cert != nil {
		client.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{*cert}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// proxyExchange posts a TokenCredentialRequest to the proxy with no credentials at all.
func proxyExchange(ctx context.Context, t *testing.T, proxy configv1alpha1.ImpersonationProxyInfo, token string) *loginv1alpha1.TokenCredentialRequest {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"apiVersion": underTest(ctx).Group("login.concierge.pinniped.dev") + "/v1alpha1",
		"kind":       "TokenCredentialRequest",
		"spec": map[string]any{
			"token":         token,
			"authenticator": map[string]any{"apiGroup": authv1alpha1.GroupName, "kind": "WebhookAuthenticator", "name": "local-users"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, proxy.Endpoint+"/apis/"+underTest(ctx).Group("login.concierge.pinniped.dev")+"/v1alpha1/tokencredentialrequests", bytes.NewReader(body))
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
			if info := steps.ClusterFrom(ctx).Info; !info.ControlPlaneVisible || proxyServes(info) {
				t.Skip("this cluster hides its control plane, so mode auto enables the proxy, or the suite enables it as the only way to credentials (TestImpersonationProxy)")
			}
			client, err := conciergeclientset.NewForConfig(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			var last configv1alpha1.CredentialIssuerStatus
			err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				ci, err := client.ConfigV1alpha1().CredentialIssuers().Get(ctx, underTest(ctx).CredentialIssuer, metav1.GetOptions{})
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
			if _, err := kubeClient(t, cfg).CoreV1().Services(underTest(ctx).Concierge.Namespace).Get(ctx, underTest(ctx).Concierge.Name("impersonation-proxy-load-balancer"), metav1.GetOptions{}); err == nil {
				t.Error("the proxy's load balancer Service exists although the proxy is disabled")
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// testStreamingThroughProxy gives pinny edit in a new namespace and, through the proxy as pinny,
// watches pods, creates a pod that logs and serves HTTPS on 8443 (the local-user-authenticator of
// our server image, which has no shell), then follows its logs, execs in it and forwards a port to it.
func testStreamingThroughProxy(ctx context.Context, t *testing.T, cfg *envconf.Config, proxy configv1alpha1.ImpersonationProxyInfo, cred *loginv1alpha1.ClusterCredential) {
	t.Helper()
	kube := kubeClient(t, cfg)
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-proxy-streaming-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = kube.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns.Name, metav1.DeleteOptions{})
	}()
	for _, rb := range []*rbacv1.RoleBinding{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "pinny-edit"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "pinny"}},
		},
		{
			// The local-user-authenticator watches the user Secrets of its namespace.
			ObjectMeta: metav1.ObjectMeta{Name: "default-view-secrets"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-secrets"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns.Name}},
		},
	} {
		if _, err := kube.RbacV1().RoleBindings(ns.Name).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	readSecrets := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "read-secrets"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := kube.RbacV1().Roles(ns.Name).Create(ctx, readSecrets, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	ca, err := base64.StdEncoding.DecodeString(proxy.CertificateAuthorityData)
	if err != nil {
		t.Fatal(err)
	}
	asPinny, err := kubernetes.NewForConfig(&rest.Config{Host: proxy.Endpoint, TLSClientConfig: rest.TLSClientConfig{
		CAData: ca, CertData: []byte(cred.ClientCertificateData), KeyData: []byte(cred.ClientKeyData),
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The proxy caches authorization denials briefly: retry until the binding counts.
	var watcher watch.Interface
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(context.Context) (bool, error) {
		// The watch outlives this poll, whose context ends with it.
		watcher, err = asPinny.CoreV1().Pods(ns.Name).Watch(ctx, metav1.ListOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("watching pods through the proxy with edit: %v", err)
	}
	defer watcher.Stop()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "streamer"},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532)},
			Containers: []corev1.Container{{
				Name:            "streamer",
				Image:           steps.Image(ctx, steps.ServerImage),
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"/usr/local/bin/local-user-authenticator", "--namespace=" + ns.Name,
					"--ca-bundle-file=/ca/ca.pem", "--v=4"},
				Ports:        []corev1.ContainerPort{{Name: "https", ContainerPort: 8443}},
				VolumeMounts: []corev1.VolumeMount{{Name: "ca", MountPath: "/ca"}},
			}},
			Volumes: []corev1.Volume{{Name: "ca", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	if _, err := asPinny.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a pod through the proxy: %v", err)
	}
	timeout := time.After(30 * time.Second)
	for seen := false; !seen; {
		select {
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				t.Fatal("the watch through the proxy closed before the pod's event")
			}
			p, isPod := ev.Object.(*corev1.Pod)
			seen = ev.Type == watch.Added && isPod && p.Name == pod.Name
		case <-timeout:
			t.Fatal("no ADDED event for the pod through the proxy's watch within 30s")
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns.Name).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && podReady(p), nil
	}); err != nil {
		t.Fatalf("the pod never became ready: %v", err)
	}

	kubeconfig := proxyKubeconfig(t, cfg, proxy, cred)
	t.Run("logs -f", func(t *testing.T) {
		cmd, lines := startKubectl(ctx, t, kubeconfig, "logs", "-f", "-n", ns.Name, pod.Name)
		defer stopKubectl(cmd)
		if line, ok := waitForLine(lines, 30*time.Second, func(l string) bool { return strings.Contains(l, "serving TokenReview webhook") }); !ok {
			t.Errorf("kubectl logs -f through the proxy: no serving line within 30s (last %q)", line)
		}
	})
	t.Run("exec", func(t *testing.T) {
		out, err := kubectlCombined(ctx, kubeconfig, "exec", "-n", ns.Name, pod.Name, "--", "/usr/local/bin/local-user-authenticator", "--help")
		if err != nil || !strings.Contains(out, "-listen-address") {
			t.Errorf("kubectl exec through the proxy: %v: %s", err, out)
		}
	})
	t.Run("port-forward", func(t *testing.T) {
		cmd, lines := startKubectl(ctx, t, kubeconfig, "port-forward", "-n", ns.Name, "pod/"+pod.Name, ":8443")
		defer stopKubectl(cmd)
		forwarding := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8443`)
		line, ok := waitForLine(lines, 30*time.Second, forwarding.MatchString)
		if !ok {
			t.Fatalf("kubectl port-forward through the proxy: not forwarding within 30s (last %q)", line)
		}
		// The pod's serving certificate is self-signed by a CA we did not read: the tunnel is the point.
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := client.Get("https://127.0.0.1:" + forwarding.FindStringSubmatch(line)[1] + "/")
		if err != nil {
			t.Fatalf("a request through the forwarded port: %v", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET / at the local-user-authenticator through the forwarded port: %s, want 404 (it serves only its webhook path)", resp.Status)
		}
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].Ready
}

// startKubectl starts a long-running kubectl and sends the lines of its stdout and stderr.
func startKubectl(ctx context.Context, t *testing.T, kubeconfig string, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	dir, err := steps.KubeBinDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1000)
	go func() {
		_ = cmd.Wait()
		_ = w.Close()
	}()
	go func() {
		defer close(lines)
		s := bufio.NewScanner(r)
		for s.Scan() {
			select {
			case lines <- s.Text():
			default: // nobody reads any more
			}
		}
	}()
	return cmd, lines
}

func stopKubectl(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
}

// waitForLine reads lines until one matches, they end, or timeout passes; it returns the last line.
func waitForLine(lines <-chan string, timeout time.Duration, match func(string) bool) (string, bool) {
	deadline := time.After(timeout)
	last := ""
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return last, false
			}
			last = l
			if match(l) {
				return l, true
			}
		case <-deadline:
			return last, false
		}
	}
}

// kubectlCombined runs kubectl and returns its stdout and stderr together.
func kubectlCombined(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	dir, err := steps.KubeBinDir()
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}
