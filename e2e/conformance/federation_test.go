package conformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/yaml"

	"sealion.dev/core/certauthority"
	"sealion.dev/e2e/installation"
	"sealion.dev/e2e/steps"
	"sealion.dev/fixtures/browser"
	"sealion.dev/fixtures/tunnel"
	"sealion.dev/providers"
)

// The Supervisor is installed once per cluster, by the first test that logs in through it (in
// installed mode, the user's is used as it is), and reached where both this machine (the CLI, the
// browser) and the cluster's pods (the Concierge fetching the issuer's keys) reach it. On clusters
// of this machine that is a NodePort of the first node, and its FederationDomains share that IP
// address as issuer host, so they are served with the Supervisor's default certificate (there is
// no SNI for an IP address). Where fixtures run in the cluster (steps.FixturesInCluster: clusters
// not on this machine, whose Services it cannot reach), the issuer host is the in-cluster name of
// a ClusterIP Service of the suite's, which pods resolve and this machine reaches through the
// run's tunnel proxy (steps.Cluster.Tunnel); each FederationDomain names a certificate Secret of
// the suite's for it (spec.tls), so that a user's default certificate is left alone. Either
// certificate is issued by federationCA.

// supervisorExposure names the Service and the Secret the suite adds to the Supervisor's
// namespace to reach it, which DeleteSupervisorExposure removes at the end of the run.
const supervisorExposure = "sealion-e2e-supervisor"

var (
	federationOnce sync.Once
	federationHost string // "IP:port", or the Service's name (port 443)
	// federationProxy is the run's tunnel proxy through which this machine reaches the
	// Supervisor, empty when it is reached directly.
	federationProxy string
	// federationTLSSecret is the certificate Secret each FederationDomain names, empty where the
	// default certificate serves them.
	federationTLSSecret string
	federationCA        *certauthority.CA
	federationErr       error
)

// supervisorHost installs and exposes the Supervisor on the test's cluster if that is not done
// yet, and returns its address. Where the installation has no Supervisor, the test is skipped.
func supervisorHost(ctx context.Context, t *testing.T, cfg *envconf.Config) string {
	t.Helper()
	if underTest(ctx).Supervisor == nil {
		t.Skip("the installation has no Supervisor")
	}
	federationOnce.Do(func() { federationErr = installSupervisor(ctx, cfg, steps.ReleaseDir()) })
	if federationErr != nil {
		t.Fatalf("installing the Supervisor: %v", federationErr)
	}
	return federationHost
}

// installSupervisor installs the Supervisor of the release in releaseDir, unless the
// installation is a user's, and exposes it with a new federationCA, setting federationHost (and
// federationProxy, federationTLSSecret).
func installSupervisor(ctx context.Context, cfg *envconf.Config, releaseDir string) error {
	began := time.Now()
	if !installation.Installed() {
		if err := runAll(ctx, cfg, steps.InstallSupervisor(releaseDir)...); err != nil {
			return err
		}
	}
	var err error
	if federationCA, err = certauthority.New("e2e Supervisor CA", 24*time.Hour); err != nil {
		return err
	}
	c := steps.ClusterFrom(ctx)
	if steps.FixturesInCluster(c.Info) {
		err = exposeSupervisorInCluster(ctx, c)
	} else {
		err = exposeSupervisorOnNode(ctx, cfg.KubeconfigFile(), *c.Installation.Supervisor)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "e2e: Supervisor installed in %s, reached at %s\n", time.Since(began).Round(time.Second), federationHost)
	return nil
}

// exposeSupervisorOnNode serves the Supervisor at a NodePort of the first node, its default
// certificate naming that node's IP address.
func exposeSupervisorOnNode(ctx context.Context, kubeconfig string, supervisor installation.Server) error {
	nodeIP, err := steps.Kubectl(ctx, kubeconfig, "", "get", "nodes", "-o",
		`jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}`)
	if err != nil {
		return err
	}
	ip := net.ParseIP(strings.TrimSpace(nodeIP))
	if ip == nil {
		return fmt.Errorf("the first node has no InternalIP address (got %q)", nodeIP)
	}
	cert, key, err := federationCA.IssueServingCert(ip.String(), nil, []net.IP{ip}, 24*time.Hour)
	if err != nil {
		return err
	}
	service := supervisorService(supervisor, corev1.ServiceTypeNodePort)
	tls := tlsSecret(supervisor.Name("default-tls-certificate"), supervisor.Namespace, cert, key)
	if err := applyObjects(ctx, kubeconfig, service, tls); err != nil {
		return err
	}
	port, err := steps.Kubectl(ctx, kubeconfig, "", "get", "service", "-n", supervisor.Namespace,
		service.Name, "-o", "jsonpath={.spec.ports[0].nodePort}")
	if err != nil {
		return err
	}
	federationHost = net.JoinHostPort(ip.String(), strings.TrimSpace(port))
	return nil
}

// exposeSupervisorInCluster names the Supervisor by a ClusterIP Service of the suite's, a
// certificate Secret of the suite's naming that, and tunnels that name's port 443 through the
// run's proxy to the Supervisor's pods, each connection to one ready when it is made. The tunnel
// lasts as long as the run.
func exposeSupervisorInCluster(ctx context.Context, c *steps.Cluster) error {
	supervisor := *c.Installation.Supervisor
	host := tunnel.ServiceHost(supervisorExposure, supervisor.Namespace)
	cert, key, err := federationCA.IssueServingCert(host, []string{host}, nil, 24*time.Hour)
	if err != nil {
		return err
	}
	service := supervisorService(supervisor, corev1.ServiceTypeClusterIP)
	if err := applyObjects(ctx, c.Kubeconfig, service, tlsSecret(supervisorExposure, supervisor.Namespace, cert, key)); err != nil {
		return err
	}
	config, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	proxy, err := c.Tunnel()
	if err != nil {
		return err
	}
	// The Service's endpoints appear once its controller has seen the pods.
	var exposeErr error
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, exposeErr = tunnel.ExposeService(ctx, proxy, config, client, supervisor.Namespace, supervisorExposure, 443)
		return exposeErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("tunnelling to Service %s/%s for a minute: %w", supervisor.Namespace, supervisorExposure, exposeErr)
	}
	federationHost, federationProxy, federationTLSSecret = host, proxy.URL(), supervisorExposure
	return nil
}

// supervisorService is the suite's Service of the Supervisor's endpoints (its https port).
func supervisorService(supervisor installation.Server, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: supervisorExposure, Namespace: supervisor.Namespace},
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: supervisor.Pods,
			Ports:    []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(supervisor.HTTPSPort)}},
		},
	}
}

// deleteSupervisorExposure deletes the Service and the certificate Secret the suite added to the
// Supervisor's namespace, at the end of a run against an installation it does not delete.
func deleteSupervisorExposure() env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		supervisor := steps.ClusterFrom(ctx).Installation.Supervisor
		if supervisor == nil {
			return ctx, nil
		}
		_, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "delete", "--ignore-not-found", "-n", supervisor.Namespace,
			"service/"+supervisorExposure, "secret/"+supervisorExposure)
		return ctx, err
	}
}

// tlsSecret is a certificate Secret of the Supervisor's; the chain holds the CA, which the
// browser trusts by its key's pin.
func tlsSecret(name, namespace string, cert, key []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: append(cert, federationCA.Bundle()...), corev1.TLSPrivateKeyKey: key},
	}
}

// applyObjects applies API objects (with their TypeMeta set) with kubectl.
func applyObjects(ctx context.Context, kubeconfig string, objs ...any) error {
	var docs []string
	for _, obj := range objs {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		docs = append(docs, string(b))
	}
	_, err := steps.Kubectl(ctx, kubeconfig, strings.Join(docs, "---\n"), "apply", "--server-side", "--force-conflicts", "-f", "-")
	return err
}

// federatedLogin is one test's FederationDomain and the JWTAuthenticator trusting it.
type federatedLogin struct {
	issuer    string
	audience  string
	authName  string
	caBundle  []byte
	kubectlTo *envconf.Config
	// proxyURL is the tunnel proxy through which this machine reaches the Supervisor (and any
	// upstream in the cluster), for the CLI's HTTPS_PROXY and the browser; empty when direct.
	proxyURL string
}

// browser starts Chromium trusting the Supervisor and the upstream's CA bundle, through the run's
// tunnel proxy when the Supervisor is reached through it.
func (fl *federatedLogin) browser(ctx context.Context, t *testing.T, upstreamCA []byte) *browser.Browser {
	t.Helper()
	b, err := browser.Start(ctx, browser.Options{TrustedCABundle: append(append([]byte{}, fl.caBundle...), upstreamCA...), ProxyServer: fl.proxyURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// hostIP is this machine's address that pods reach: the fixtures listen there.
func hostIP(t *testing.T) net.IP {
	t.Helper()
	s, err := providers.HostIPv4()
	if err != nil {
		t.Fatal(err)
	}
	return net.ParseIP(s)
}

// issuerURL is the issuer of the FederationDomain named name.
func issuerURL(host, name string) string { return "https://" + host + "/" + name }

// federate creates the FederationDomain name at issuerURL(host, name) with the given identity
// providers (their objects already created), waits until it is Ready, and makes a
// JWTAuthenticator of the same name trusting it for the audience "<name>-cluster". Everything is
// deleted when the test ends.
func federate(ctx context.Context, t *testing.T, cfg *envconf.Config, host, name string, idps string) *federatedLogin {
	t.Helper()
	return federateWith(ctx, t, cfg, host, name, idps, "")
}

// federateWith is federate with more of the FederationDomain's spec: YAML lines indented as its
// fields.
func federateWith(ctx context.Context, t *testing.T, cfg *envconf.Config, host, name, idps, spec string) *federatedLogin {
	t.Helper()
	fl := &federatedLogin{issuer: issuerURL(host, name), audience: name + "-cluster", authName: name,
		caBundle: federationCA.Bundle(), kubectlTo: cfg, proxyURL: federationProxy}
	kubeconfig := cfg.KubeconfigFile()
	namespace := underTest(ctx).Supervisor.Namespace
	tls := ""
	if federationTLSSecret != "" {
		tls = "  tls: {secretName: " + federationTLSSecret + "}\n"
	}
	fd := fmt.Sprintf(`apiVersion: config.supervisor.pinniped.dev/v1alpha1
kind: FederationDomain
metadata: {name: %s, namespace: %s}
spec:
  issuer: %s
%s%s  identityProviders:
%s`, name, namespace, fl.issuer, tls, spec, idps)
	if _, err := steps.Kubectl(ctx, kubeconfig, fd, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = steps.Kubectl(context.WithoutCancel(ctx), kubeconfig, "", "delete", "--ignore-not-found", "-n", namespace, "federationdomain/"+name)
	})
	waitForPhase(ctx, t, cfg, "federationdomain/"+name)
	if err := fl.waitServed(ctx); err != nil {
		t.Fatal(err)
	}
	fl.trustFrom(ctx, t, name, fl.audience)
	return fl
}

// waitServed waits until every Supervisor pod serves fl's issuer. The phase is written by the
// leader once it serves the issuer; the other pods follow from their own caches a moment later,
// and a CLI sent to one of them meanwhile would get a 404. Each try is a new connection the
// Service may send to any pod, so enough successes in a row (1 in 2^12 to miss a lagging pod of
// two) show that they all serve it.
func (fl *federatedLogin) waitServed(ctx context.Context) error {
	const inARow = 12
	row := 0
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, last = discover(ctx, fl); last != nil {
			row = 0
			return false, nil
		}
		row++
		return row == inARow, nil
	})
	if err != nil {
		return fmt.Errorf("the issuer %s is not served by every Supervisor pod: %w (last answer: %v)", fl.issuer, err, last)
	}
	return nil
}

// discover fetches the discovery document of fl's issuer on a new connection (through the run's
// proxy when there is one), so that successive calls may reach different Supervisor pods.
func discover(ctx context.Context, fl *federatedLogin) ([]byte, error) {
	client, err := fl.httpClient()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fl.issuer+"/.well-known/openid-configuration", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", req.URL, resp.Status, body)
	}
	return body, nil
}

// httpClient reaches fl's issuer, trusting its CA, through the run's proxy when there is one,
// on a new connection for each request.
func (fl *federatedLogin) httpClient() (*http.Client, error) {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(fl.caBundle)
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}
	if fl.proxyURL != "" {
		proxy, err := url.Parse(fl.proxyURL)
		if err != nil {
			return nil, err
		}
		transport.Proxy = http.ProxyURL(proxy)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: transport}, nil
}

// trustFrom makes a JWTAuthenticator trusting the FederationDomain's ID tokens for audience.
func (fl *federatedLogin) trustFrom(ctx context.Context, t *testing.T, authName, audience string) {
	t.Helper()
	kubeconfig := fl.kubectlTo.KubeconfigFile()
	auth := fmt.Sprintf(`apiVersion: authentication.concierge.pinniped.dev/v1alpha1
kind: JWTAuthenticator
metadata: {name: %s}
spec:
  issuer: %s
  audience: %s
  tls: {certificateAuthorityData: %s}
`, authName, fl.issuer, audience, base64.StdEncoding.EncodeToString(fl.caBundle))
	if _, err := steps.Kubectl(ctx, kubeconfig, auth, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = steps.Kubectl(context.WithoutCancel(ctx), kubeconfig, "", "delete", "--ignore-not-found", "jwtauthenticator/"+authName)
	})
	// Ready means the Concierge fetched the issuer's discovery document and keys.
	if _, err := steps.WaitFor(2*time.Minute, "jsonpath={.status.phase}=Ready", "jwtauthenticator/"+authName)(ctx, fl.kubectlTo); err != nil {
		t.Fatal(err)
	}
}

// user hands out a kubeconfig for this login through the upstream identity provider idpName
// with the given flow (cli_password or browser_authcode); env is added to the user's
// environment (PINNIPED_USERNAME and PINNIPED_PASSWORD for the CLI password flow). The plugin
// says what it does (PINNIPED_DEBUG), for the tests to see refreshes and new logins.
func (fl *federatedLogin) user(ctx context.Context, t *testing.T, idpName, flow string, env ...string) cliUser {
	t.Helper()
	return fl.userWith(ctx, t, []string{"--upstream-identity-provider-name", idpName, "--upstream-identity-provider-flow", flow}, env...)
}

// userWith is user with the given get kubeconfig flags choosing the identity provider and the
// flows.
func (fl *federatedLogin) userWith(ctx context.Context, t *testing.T, flags []string, env ...string) cliUser {
	t.Helper()
	waitForStrategy(ctx, t, fl.kubectlTo, "")
	proxyEnv, err := steps.ProxyClientEnv(ctx, fl.proxyURL, fl.kubectlTo.KubeconfigFile())
	if err != nil {
		t.Fatal(err)
	}
	sessions := filepath.Join(t.TempDir(), "sessions.yaml")
	u := cliUserWithEnv(ctx, t, fl.kubectlTo, proxyEnv, append([]string{"--concierge-authenticator-type", "jwt", "--concierge-authenticator-name", fl.authName,
		"--oidc-skip-browser", "--oidc-session-cache", sessions}, flags...)...)
	u.sessionCache, u.extraEnv = sessions, slices.Concat(proxyEnv, env, []string{"PINNIPED_DEBUG=true"})
	return u
}

// waitForPhase waits until a Supervisor object's status.phase is Ready, failing with its
// conditions otherwise.
func waitForPhase(ctx context.Context, t *testing.T, cfg *envconf.Config, resource string) {
	t.Helper()
	if _, err := steps.WaitFor(2*time.Minute, "jsonpath={.status.phase}=Ready", "-n", underTest(ctx).Supervisor.Namespace, resource)(ctx, cfg); err != nil {
		conds, _ := steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "get", "-n", underTest(ctx).Supervisor.Namespace, resource, "-o",
			`jsonpath={range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}`)
		t.Fatalf("%s is not Ready: %v\n%s", resource, err, conds)
	}
}

// secret is a Secret in the Supervisor's namespace.
func secret(ctx context.Context, name string, typ corev1.SecretType, data map[string]string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: underTest(ctx).Supervisor.Namespace},
		Type:       typ,
		StringData: data,
	}
}

// createIDP applies an identity provider and its Secret, waits until it is Ready, and deletes
// both when the test ends.
func createIDP(ctx context.Context, t *testing.T, cfg *envconf.Config, resource string, objs ...any) {
	t.Helper()
	kubeconfig := cfg.KubeconfigFile()
	if err := applyObjects(ctx, kubeconfig, objs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, obj := range objs {
			b, _ := yaml.Marshal(obj)
			_, _ = steps.Kubectl(context.WithoutCancel(ctx), kubeconfig, string(b), "delete", "--ignore-not-found", "-f", "-")
		}
	})
	waitForPhase(ctx, t, cfg, resource)
}

// federationIDP is one entry of a FederationDomain's identityProviders, as YAML.
func federationIDP(displayName, kind, name, transforms string) string {
	s := fmt.Sprintf("  - displayName: %s\n    objectRef: {apiGroup: idp.supervisor.pinniped.dev, kind: %s, name: %s}\n", displayName, kind, name)
	if transforms != "" {
		s += "    transforms:\n" + transforms
	}
	return s
}
