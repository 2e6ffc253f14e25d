package steps

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"sealion.dev/e2e/installation"
	"sealion.dev/fixtures/tunnel"
)

// MetricsReader is the ServiceAccount that stands for Prometheus: allowed only get on the
// non-resource URL /metrics, as kube-prometheus-stack's role allows its Prometheus.
const MetricsReader = "sealion-e2e-metrics-reader"

// MetricsReaderToken makes the ServiceAccount MetricsReader in namespace default and returns a
// token for it; allowed binds it to a ClusterRole of get on /metrics alone, else it gets the
// ServiceAccount MetricsReader-denied, allowed nothing. What a run stopped before its clean-up
// left behind is reused: it is made the same way.
func MetricsReaderToken(ctx context.Context, kube kubernetes.Interface, allowed bool) (string, error) {
	name := MetricsReader
	if !allowed {
		name += "-denied"
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	if _, err := kube.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
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
			return "", err
		}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", err
		}
	}
	tr, err := kube.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// DeleteMetricsReaders removes what MetricsReaderToken made.
func DeleteMetricsReaders(ctx context.Context, kube kubernetes.Interface) {
	_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, MetricsReader, metav1.DeleteOptions{})
	_ = kube.RbacV1().ClusterRoles().Delete(ctx, MetricsReader, metav1.DeleteOptions{})
	for _, sa := range []string{MetricsReader, MetricsReader + "-denied"} {
		_ = kube.CoreV1().ServiceAccounts("default").Delete(ctx, sa, metav1.DeleteOptions{})
	}
}

// ScrapeTarget is a server's /metrics as the charts' ServiceMonitor (or, for the
// local-user-authenticator, a plain scrape config) names it: a Service, its port named https, the
// name its certificate is for and the Secret whose key caCertificate holds the CA that signs it.
type ScrapeTarget struct {
	Title, Namespace, Service string
	CASecret                  string
	// Authorized: the endpoint wants Prometheus' token (the aggregated API servers' /metrics).
	Authorized bool
}

// ServerMetrics is /metrics of an aggregated API server of the installation (the Concierge, the
// Supervisor): its Service api, its serving certificate's CA, Prometheus' token wanted.
func ServerMetrics(title string, s installation.Server) ScrapeTarget {
	return ScrapeTarget{Title: title, Namespace: s.Namespace, Service: s.Name("api"), CASecret: s.Name("api-tls-serving-certificate"), Authorized: true}
}

// LocalUserAuthenticatorMetrics is the local-user-authenticator's /metrics, which any client may read.
var LocalUserAuthenticatorMetrics = ScrapeTarget{
	Title: "local-user-authenticator", Namespace: "local-user-authenticator", Service: "local-user-authenticator", CASecret: "api-serving-cert",
}

// PodScrape is what one pod's /metrics answered: Prometheus' text format when Status is 200.
type PodScrape struct {
	Pod    string
	Status int
	Body   []byte
}

// Scrape gets /metrics of every running pod behind target's Service, as Prometheus scrapes a
// ServiceMonitor's endpoints: through a tunnel to the pod, HTTPS verified against the CA the
// server publishes for the Service's name, with token (when not empty) as the bearer.
func Scrape(ctx context.Context, config *rest.Config, kube kubernetes.Interface, target ScrapeTarget, token string) ([]PodScrape, error) {
	svc, err := kube.CoreV1().Services(target.Namespace).Get(ctx, target.Service, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var port *corev1.ServicePort
	for i, p := range svc.Spec.Ports {
		if p.Name == "https" || len(svc.Spec.Ports) == 1 {
			port = &svc.Spec.Ports[i]
		}
	}
	if port == nil {
		return nil, fmt.Errorf("service %s/%s has no port named https", target.Namespace, target.Service)
	}
	secret, err := kube.CoreV1().Secrets(target.Namespace).Get(ctx, target.CASecret, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data["caCertificate"]) {
		return nil, fmt.Errorf("secret %s/%s holds no CA", target.Namespace, target.CASecret)
	}
	pods, err := kube.CoreV1().Pods(target.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		return nil, err
	}
	var out []PodScrape
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
		dial, stop, err := tunnel.Forward(ctx, config, kube, target.Namespace, pod.Name, podPort)
		if err != nil {
			return nil, err
		}
		status, body, err := scrapeOne(ctx, dial, tunnel.ServiceHost(target.Service, target.Namespace), roots, token)
		stop()
		if err != nil {
			return nil, fmt.Errorf("scraping pod %s/%s: %w", target.Namespace, pod.Name, err)
		}
		out = append(out, PodScrape{Pod: pod.Name, Status: status, Body: body})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no running pod behind service %s/%s", target.Namespace, target.Service)
	}
	return out, nil
}

// scrapeOne gets https://host/metrics through dial, verifying the certificate for host against roots.
func scrapeOne(ctx context.Context, dial tunnel.DialFunc, host string, roots *x509.CertPool, token string) (int, []byte, error) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext:     func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12},
	}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s/metrics", host), nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}
