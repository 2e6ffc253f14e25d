package conformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"sealion.dev/e2e/steps"
	"sealion.dev/fixtures/tunnel"
)

// metricsReader is the suite's stand-in for Prometheus: a ServiceAccount allowed only get on the
// non-resource URL /metrics, as the ServiceMonitor's Prometheus is (kube-prometheus-stack's role).
const metricsReader = "sealion-e2e-metrics-reader"

// scrapeTarget is a server's /metrics as the charts' ServiceMonitor (or, for the
// local-user-authenticator, a plain scrape config) names it: a Service, its port named https, the
// name its certificate is for and the Secret key holding the CA that signs it.
type scrapeTarget struct {
	title, namespace, service string
	caSecret                  string // key caCertificate
	// authorized: the endpoint wants Prometheus' token (the aggregated API servers' /metrics).
	authorized bool
}

// TestMetricsThroughServices scrapes every server's /metrics as Prometheus does through the
// charts' ServiceMonitors: each pod behind the Service, HTTPS verified against the CA the server
// publishes for the Service's name, with a ServiceAccount token allowed get on /metrics and nothing
// else. Every documented metric of a server that a freshly used installation has is there, every
// metric served is documented, the exchange counters move with an exchange and a refusal, and a
// token without the permission is refused.
func TestMetricsThroughServices(t *testing.T) {
	var kube kubernetes.Interface
	var allowed, denied string
	var targets []scrapeTarget
	f := features.New("metrics through the Services, as Prometheus scrapes them").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kube = kubeClient(t, cfg)
			setUpLocalUsers(ctx, t, cfg)
			allowed = metricsReaderToken(ctx, t, kube, true)
			denied = metricsReaderToken(ctx, t, kube, false)
			inst := underTest(ctx)
			targets = []scrapeTarget{{"Concierge", inst.Concierge.Namespace, inst.Concierge.Name("api"), inst.Concierge.Name("api-tls-serving-certificate"), true}}
			if inst.Supervisor != nil {
				supervisorHost(ctx, t, cfg) // installs it where no test has yet
				targets = append(targets, scrapeTarget{"Supervisor", inst.Supervisor.Namespace, inst.Supervisor.Name("api"), inst.Supervisor.Name("api-tls-serving-certificate"), true})
			}
			targets = append(targets, scrapeTarget{"local-user-authenticator", "local-user-authenticator", "local-user-authenticator", "api-serving-cert", false})
			return ctx
		}).
		Assess("a token without get on /metrics is refused", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, target := range targets {
				if !target.authorized {
					continue
				}
				if _, status := scrapeAll(ctx, t, cfg, kube, target, denied); status != http.StatusForbidden {
					t.Errorf("%s: a token without the permission got %d, want 403", target.title, status)
				}
				if _, status := scrapeAll(ctx, t, cfg, kube, target, ""); status != http.StatusForbidden && status != http.StatusUnauthorized {
					t.Errorf("%s: no token got %d, want 401 or 403", target.title, status)
				}
			}
			return ctx
		}).
		Assess("the exchange counters move with an exchange and a refusal", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			concierge, users := targets[0], targets[len(targets)-1]
			before := scrapeOK(ctx, t, cfg, kube, concierge, allowed)
			reviewsBefore := scrapeOK(ctx, t, cfg, kube, users, "")
			if resp := kubectlExchange(ctx, t, cfg, "pinny:correct horse", "WebhookAuthenticator", "local-users"); resp.Status.Credential == nil {
				t.Fatalf("no credential: %v", resp.Status.Message)
			}
			if resp := kubectlExchange(ctx, t, cfg, "pinny:battery staple", "WebhookAuthenticator", "local-users"); resp.Status.Credential != nil {
				t.Fatal("a wrong password got a credential")
			}
			after := scrapeOK(ctx, t, cfg, kube, concierge, allowed)
			reviewsAfter := scrapeOK(ctx, t, cfg, kube, users, "")
			for _, c := range []struct {
				families map[string]*dto.MetricFamily
				was      map[string]*dto.MetricFamily
				name     string
				labels   map[string]string
			}{
				{after, before, "pinniped_concierge_token_credential_requests_total", map[string]string{"authenticator_kind": "WebhookAuthenticator", "result": "success"}},
				{after, before, "pinniped_concierge_token_credential_requests_total", map[string]string{"authenticator_kind": "WebhookAuthenticator", "result": "failure"}},
				{after, before, "pinniped_concierge_token_credential_request_failures_total", map[string]string{"authenticator_kind": "WebhookAuthenticator", "reason": "not_authenticated"}},
				{after, before, "pinniped_concierge_client_certificates_issued_total", map[string]string{"result": "success"}},
				{after, before, "pinniped_concierge_authenticator_upstream_requests_total", map[string]string{"authenticator_kind": "WebhookAuthenticator", "result": "success"}},
				{reviewsAfter, reviewsBefore, "pinniped_local_user_authenticator_token_reviews_total", map[string]string{"result": "authenticated"}},
				{reviewsAfter, reviewsBefore, "pinniped_local_user_authenticator_token_reviews_total", map[string]string{"result": "refused"}},
			} {
				if was, is := sum(c.was, c.name, c.labels), sum(c.families, c.name, c.labels); is < was+1 {
					t.Errorf("%s%v went from %v to %v over the exchanges", c.name, c.labels, was, is)
				}
			}
			return ctx
		}).
		Assess("every documented metric is served, and every metric served is documented", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			documented := documentedMetrics(t)
			proxy := proxyServes(steps.ClusterFrom(ctx).Info)
			for _, target := range targets {
				token := ""
				if target.authorized {
					token = allowed
				}
				families := scrapeOK(ctx, t, cfg, kube, target, token)
				if target.title == "Supervisor" {
					// The leader's collector sweeps every 30 s: its counters appear with its first sweep.
					err := wait.PollUntilContextTimeout(ctx, 5*time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
						families = scrapeOK(ctx, t, cfg, kube, target, token)
						return sum(families, "pinniped_supervisor_session_garbage_collections_total", nil) > 0, nil
					})
					if err != nil {
						t.Errorf("Supervisor: no garbage collection sweep counted in a minute")
					}
				}
				for name := range families {
					if strings.HasPrefix(name, "pinniped_") && documented[name] == "" {
						t.Errorf("%s serves %s, which docs/reference/metrics.md does not list", target.title, name)
					}
				}
				for name, server := range documented {
					if !strings.Contains(server, target.title) || families[name] != nil {
						continue
					}
					if why := notYetServed(name, proxy); why != "" {
						t.Logf("%s: %s not served yet, as expected: %s", target.title, name, why)
						continue
					}
					t.Errorf("%s does not serve %s", target.title, name)
				}
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, metricsReader, metav1.DeleteOptions{})
			_ = kube.RbacV1().ClusterRoles().Delete(ctx, metricsReader, metav1.DeleteOptions{})
			for _, sa := range []string{metricsReader, metricsReader + "-denied"} {
				_ = kube.CoreV1().ServiceAccounts("default").Delete(ctx, sa, metav1.DeleteOptions{})
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// notYetServed says why a documented metric may be missing from a server the suite has just
// used: its series appear with the event they count, which this test does not cause.
func notYetServed(name string, proxyServes bool) string {
	switch {
	case strings.HasPrefix(name, "pinniped_concierge_impersonation_proxy_") && !proxyServes:
		return "the impersonation proxy does not serve on this cluster"
	case strings.HasPrefix(name, "pinniped_concierge_impersonation_proxy_request"):
		return "no request has been sent through the proxy by this test"
	case name == "pinniped_requests_rejected_total":
		return "no request was refused by an in-flight limit (429)"
	case strings.HasPrefix(name, "pinniped_supervisor_token_request"), strings.HasPrefix(name, "pinniped_supervisor_upstream_request"):
		return "no login through the Supervisor in this test"
	case name == "pinniped_supervisor_signing_key_generated_timestamp_seconds":
		return "it has a series per FederationDomain, and this test makes none"
	}
	return ""
}

// documentedMetrics reads docs/reference/metrics.md: each metric and the title of the section
// (the server) that lists it.
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(steps.RepoPath("docs/reference/metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	section := ""
	row := regexp.MustCompile("^\\| `(pinniped_[a-z_]+)` \\|")
	for _, line := range strings.Split(string(data), "\n") {
		if title, ok := strings.CutPrefix(line, "## "); ok {
			section = title
		}
		if m := row.FindStringSubmatch(line); m != nil {
			out[m[1]] = section
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d metrics in docs/reference/metrics.md", len(out))
	}
	return out
}

// metricsReaderToken makes a ServiceAccount and returns a token for it; allowed binds it to a
// ClusterRole of get on /metrics alone.
func metricsReaderToken(ctx context.Context, t *testing.T, kube kubernetes.Interface, allowed bool) string {
	t.Helper()
	name := metricsReader
	if !allowed {
		name += "-denied"
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	// A run stopped before its teardown leaves these behind, the same as they would be made.
	if _, err := kube.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if allowed {
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}},
		}
		if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	tr, err := kube.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// scrapeOK scrapes every pod of target and fails unless each answered 200.
func scrapeOK(ctx context.Context, t *testing.T, cfg *envconf.Config, kube kubernetes.Interface, target scrapeTarget, token string) map[string]*dto.MetricFamily {
	t.Helper()
	families, status := scrapeAll(ctx, t, cfg, kube, target, token)
	if status != http.StatusOK {
		t.Fatalf("%s: /metrics answered %d", target.title, status)
	}
	return families
}

// scrapeAll scrapes /metrics of every ready pod behind target's Service, as Prometheus scrapes a
// ServiceMonitor's endpoints, and returns the families of all pods together and the worst status.
func scrapeAll(ctx context.Context, t *testing.T, cfg *envconf.Config, kube kubernetes.Interface, target scrapeTarget, token string) (map[string]*dto.MetricFamily, int) {
	t.Helper()
	svc, err := kube.CoreV1().Services(target.namespace).Get(ctx, target.service, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var port *corev1.ServicePort
	for i, p := range svc.Spec.Ports {
		if p.Name == "https" || len(svc.Spec.Ports) == 1 {
			port = &svc.Spec.Ports[i]
		}
	}
	if port == nil {
		t.Fatalf("Service %s/%s has no port named https", target.namespace, target.service)
	}
	secret, err := kube.CoreV1().Secrets(target.namespace).Get(ctx, target.caSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data["caCertificate"]) {
		t.Fatalf("Secret %s/%s holds no CA", target.namespace, target.caSecret)
	}
	pods, err := kube.CoreV1().Pods(target.namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]*dto.MetricFamily{}
	worst, scraped := 0, 0
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
			continue
		}
		podPort := port.TargetPort.IntValue()
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if port.TargetPort.StrVal != "" && p.Name == port.TargetPort.StrVal {
					podPort = int(p.ContainerPort)
				}
			}
		}
		dial, stop, err := tunnel.Forward(ctx, cfg.Client().RESTConfig(), kube, target.namespace, pod.Name, podPort)
		if err != nil {
			t.Fatal(err)
		}
		families, status := scrape(ctx, t, dial, tunnel.ServiceHost(target.service, target.namespace), roots, token)
		stop()
		scraped++
		worst = max(worst, status)
		for name, f := range families {
			if all[name] == nil {
				all[name] = &dto.MetricFamily{Name: f.Name, Type: f.Type}
			}
			all[name].Metric = append(all[name].Metric, f.Metric...)
		}
	}
	if scraped == 0 {
		t.Fatalf("no running pod behind Service %s/%s", target.namespace, target.service)
	}
	return all, worst
}

// scrape gets https://host/metrics through dial, verifying the certificate for host against roots.
func scrape(ctx context.Context, t *testing.T, dial tunnel.DialFunc, host string, roots *x509.CertPool, token string) (map[string]*dto.MetricFamily, int) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext:     func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12},
	}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s/metrics", host), nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("scraping %s: %v", host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scraping %s: %v", host, err)
	}
	return families, resp.StatusCode
}

// sum adds the values of the counter or gauge series of name whose labels include want.
func sum(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := families[name]
	if f == nil {
		return 0
	}
	total := 0.0
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		matches := true
		for k, v := range want {
			matches = matches && have[k] == v
		}
		if matches {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}
