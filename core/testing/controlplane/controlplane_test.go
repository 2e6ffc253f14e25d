package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"
)

func TestBinDir(t *testing.T) {
	tests := []struct {
		name          string
		binDir, cache string
		want          string
	}{
		{name: "explicit bin dir wins", binDir: "/opt/kube", cache: "/c", want: "/opt/kube"},
		{name: "cache root", cache: "/c", want: "/c/kubernetes/" + KubernetesVersion + "/bin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(BinDirEnv, tt.binDir)
			t.Setenv(CacheEnv, tt.cache)
			got, err := BinDir()
			if err != nil || got != tt.want {
				t.Fatalf("BinDir() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestStartWithoutBinaries(t *testing.T) {
	t.Setenv(BinDirEnv, t.TempDir())
	_, err := Start(context.Background(), Options{})
	if !errors.Is(err, ErrBinariesMissing) || !strings.Contains(err.Error(), "make kube-binaries") {
		t.Fatalf("Start() error = %v; want ErrBinariesMissing telling to run make kube-binaries", err)
	}
}

func TestGeneratePKI(t *testing.T) {
	certs, err := generatePKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certs.caPEM)
	frontProxyRoots := x509.NewCertPool()
	frontProxyRoots.AppendCertsFromPEM(mustRead(t, certs.frontProxyCACertFile))

	tests := []struct {
		name     string
		certFile string
		certPEM  []byte
		roots    *x509.CertPool
		usage    x509.ExtKeyUsage
		dnsName  string
	}{
		{name: "serving", certFile: certs.servingCertFile, roots: roots, usage: x509.ExtKeyUsageServerAuth, dnsName: "kubernetes.default.svc"},
		{name: "serving by IP", certFile: certs.servingCertFile, roots: roots, usage: x509.ExtKeyUsageServerAuth, dnsName: "127.0.0.1"},
		{name: "admin", certPEM: certs.adminCertPEM, roots: roots, usage: x509.ExtKeyUsageClientAuth},
		{name: "proxy client", certFile: certs.proxyClientCertFile, roots: frontProxyRoots, usage: x509.ExtKeyUsageClientAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pemBytes := tt.certPEM
			if pemBytes == nil {
				pemBytes = mustRead(t, tt.certFile)
			}
			cert := parseCert(t, pemBytes)
			_, err := cert.Verify(x509.VerifyOptions{Roots: tt.roots, DNSName: tt.dnsName, KeyUsages: []x509.ExtKeyUsage{tt.usage}})
			if err != nil {
				t.Fatalf("certificate does not verify: %v", err)
			}
		})
	}
	if _, err := tls.LoadX509KeyPair(certs.caCertFile, certs.caKeyFile); err != nil {
		t.Errorf("CA cert and key files do not form a pair: %v", err)
	}
}

// TestControlPlane starts a real control plane, uses it through client-go and kubectl, checks
// that the aggregation layer reaches a local process through an ExternalName Service, and
// checks that Stop leaves no process, port or file behind.
func TestControlPlane(t *testing.T) {
	cp := StartForTest(t, Options{})
	ctx := context.Background()
	client := kubernetes.NewForConfigOrDie(cp.RESTConfig())

	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-test"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	out, err := exec.Command(cp.KubectlPath, "--kubeconfig", cp.KubeconfigPath, "get", "namespace", ns.Name, "-o", "name").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "namespace/"+ns.Name {
		t.Fatalf("kubectl get namespace: %v: %s", err, out)
	}

	t.Run("aggregation to a local process", func(t *testing.T) { testAggregation(t, cp) })

	pids := make([]int, 0, len(cp.processes))
	for _, p := range cp.processes {
		pids = append(pids, p.cmd.Process.Pid)
	}
	if err := cp.Stop(); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process group %d still exists after Stop (kill -0: %v)", pid, err)
		}
	}
	for _, port := range cp.ports {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Errorf("port %d still in use after Stop: %v", port, err)
			continue
		}
		l.Close()
	}
	if _, err := os.Stat(cp.Dir); !os.IsNotExist(err) {
		t.Errorf("directory %s still exists after Stop (stat: %v)", cp.Dir, err)
	}
}

func TestStartFailureReportsLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: needs real etcd and kube-apiserver binaries, which -short excludes")
	}
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "sealion-controlplane-*"))
	_, err := Start(context.Background(), Options{ExtraAPIServerFlags: []string{"--no-such-flag=1"}})
	if err == nil || !strings.Contains(err.Error(), "unknown flag: --no-such-flag") {
		t.Fatalf("Start() error = %v; want the kube-apiserver log tail naming the bad flag", err)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "sealion-controlplane-*"))
	if len(after) > len(before) {
		t.Errorf("failed Start left directories behind: before %v, after %v", before, after)
	}
}

func TestDisableAnonymousAuth(t *testing.T) {
	cp := StartForTest(t, Options{DisableAnonymousAuth: true})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(mustRead(t, cp.ClientCACertFile))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get(cp.URL + "/version")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous GET /version = %d; want 401 with anonymous auth disabled", resp.StatusCode)
	}
}

// testAggregation registers an APIService backed by an HTTPS server in this test process and
// checks a request through the kube-apiserver arrives with the front-proxy identity headers.
func testAggregation(t *testing.T, cp *ControlPlane) {
	const (
		group, version = "probe.sealion.dev", "v1"
		svcName, svcNS = "probe-api", "default"
	)
	ca, err := newCA("probe-api-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.issue(certSpec{commonName: svcName, dnsNames: []string{svcName + "." + svcNS + ".svc"}, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		t.Fatal(err)
	}
	servingPair, err := tls.X509KeyPair(serving.certPEM, serving.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	frontProxyRoots := x509.NewCertPool()
	frontProxyRoots.AppendCertsFromPEM(mustRead(t, cp.FrontProxyCACertFile))

	var mu sync.Mutex
	// The aggregator also calls the backend itself (discovery, as system:kube-aggregator), so
	// every user the front proxy named is kept, not just the last.
	seenUsers := map[string]bool{}
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/"+group+"/"+version {
			http.NotFound(w, r)
			return
		}
		if len(r.TLS.VerifiedChains) > 0 && r.TLS.PeerCertificates[0].Subject.CommonName == proxyClientName {
			mu.Lock()
			seenUsers[r.Header.Get("X-Remote-User")] = true
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: group + "/" + version,
			APIResources: []metav1.APIResource{},
		})
	}))
	server.TLS = &tls.Config{Certificates: []tls.Certificate{servingPair}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: frontProxyRoots}
	server.StartTLS()
	defer server.Close()
	port := server.Listener.Addr().(*net.TCPAddr).Port

	ctx := context.Background()
	client := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	_, err = client.CoreV1().Services(svcNS).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svcName},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ExternalName service: %v", err)
	}
	aggregator := aggregatorclient.NewForConfigOrDie(cp.RESTConfig())
	_, err = aggregator.ApiregistrationV1().APIServices().Create(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: version + "." + group},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: group, Version: version,
			Service:              &apiregistrationv1.ServiceReference{Namespace: svcNS, Name: svcName, Port: ptr.To(int32(port))},
			CABundle:             ca.certPEM,
			GroupPriorityMinimum: 1000, VersionPriority: 10,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating APIService: %v", err)
	}

	if err := WaitForAPIService(ctx, cp.RESTConfig(), group, version, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !seenUsers["sealion-test-admin"] {
		t.Errorf("backend saw X-Remote-User %v from the front proxy; want the admin user among them", seenUsers)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func parseCert(t *testing.T, pemBytes []byte) *x509.Certificate {
	t.Helper()
	certs, err := certutil.ParseCertsPEM(pemBytes)
	if err != nil || len(certs) != 1 {
		t.Fatalf("parsing certificate: %v (got %d)", err, len(certs))
	}
	return certs[0]
}
