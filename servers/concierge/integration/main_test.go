package integration

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	"sealion.dev/core/testing/controlplane"
	"sealion.dev/core/testing/serverbuild"
)

const (
	conciergeNamespace = "pinniped-concierge"
	apiServiceName     = "pinniped-concierge-api"
	usersNamespace     = "local-user-authenticator"
)

// env is the shared environment: one control plane and one Concierge for the whole package.
var env *environment

type environment struct {
	cp        *controlplane.ControlPlane
	kube      kubernetes.Interface
	concierge conciergeclientset.Interface
	// anonymous is a client with no credentials, as a user has before logging in.
	anonymous  conciergeclientset.Interface
	aggregator aggregatorclient.Interface
	dir        string
	binDir     string
	servers    []*server
	// webhookURL and webhookCA reach the local-user-authenticator.
	webhookURL    string
	webhookCA     []byte
	conciergePID  int
	conciergePort int
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping Concierge integration tests: they start etcd, kube-apiserver and our servers, which -short excludes")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	e, err := setUp(context.Background())
	if e != nil {
		defer e.tearDown()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "setting up the integration environment: %v\n", err)
		return 1
	}
	env = e
	return m.Run()
}

func setUp(ctx context.Context) (*environment, error) {
	dir, err := os.MkdirTemp("", "concierge-integration-")
	if err != nil {
		return nil, err
	}
	e := &environment{dir: dir, binDir: filepath.Join(dir, "bin")}
	if err := e.buildBinaries(); err != nil {
		return e, err
	}
	// The build and the control plane's start wait as long as they make progress (a cold cache
	// on a busy machine takes minutes); what follows gets a fixed budget.
	if e.cp, err = controlplane.Start(ctx, controlplane.Options{}); err != nil {
		return e, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cfg := e.cp.RESTConfig()
	if e.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return e, err
	}
	if e.concierge, err = conciergeclientset.NewForConfig(cfg); err != nil {
		return e, err
	}
	if e.aggregator, err = aggregatorclient.NewForConfig(cfg); err != nil {
		return e, err
	}
	anonymous := rest.AnonymousClientConfig(cfg)
	anonymous.QPS = -1 // the load run must not be throttled by the client
	if e.anonymous, err = conciergeclientset.NewForConfig(anonymous); err != nil {
		return e, err
	}
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"install CRDs", e.installCRDs},
		{"create namespaces and RBAC", e.createNamespacesAndRBAC},
		{"start the Concierge", e.startConcierge},
		{"start the local-user-authenticator", e.startLocalUserAuthenticator},
		{"wait for the APIServices", e.waitForAPIServices},
	}
	for _, s := range steps {
		if err := s.run(ctx); err != nil {
			return e, fmt.Errorf("%s: %w%s", s.name, err, e.serverLogs())
		}
	}
	return e, nil
}

func (e *environment) tearDown() {
	for i := len(e.servers) - 1; i >= 0; i-- {
		e.servers[i].stop()
	}
	if e.cp != nil {
		if err := e.cp.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
		}
	}
	_ = os.RemoveAll(e.dir)
}

// buildBinaries builds our servers as they ship, so the tests run the real programs.
func (e *environment) buildBinaries() error {
	for name, pkg := range map[string]string{
		"pinniped-concierge":       "sealion.dev/servers/concierge",
		"local-user-authenticator": "sealion.dev/servers/local-user-authenticator",
	} {
		if err := serverbuild.Build(pkg, filepath.Join(e.binDir, name)); err != nil {
			return err
		}
	}
	return nil
}

func (e *environment) kubectl(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, e.cp.KubectlPath, append([]string{"--kubeconfig", e.cp.KubeconfigPath}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

func (e *environment) installCRDs(ctx context.Context) error {
	_, err := e.kubectl(ctx, nil, "apply", "-f", repoPath("core/generated/crds"))
	if err != nil {
		return err
	}
	_, err = e.kubectl(ctx, nil, "wait", "--for=condition=Established", "--timeout=30s", "crd", "--all")
	return err
}

// createNamespacesAndRBAC lets anyone, authenticated or not, create TokenCredentialRequests and
// WhoAmIRequests, as the install manifests do.
func (e *environment) createNamespacesAndRBAC(ctx context.Context) error {
	_, err := e.kubectl(ctx, []byte(`
apiVersion: v1
kind: Namespace
metadata: {name: `+conciergeNamespace+`}
---
apiVersion: v1
kind: Namespace
metadata: {name: `+usersNamespace+`}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: pinniped-concierge-pre-authn-apis}
rules:
- apiGroups: [login.concierge.pinniped.dev]
  resources: [tokencredentialrequests]
  verbs: [create, list]
- apiGroups: [identity.concierge.pinniped.dev]
  resources: [whoamirequests]
  verbs: [create, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: pinniped-concierge-pre-authn-apis}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pinniped-concierge-pre-authn-apis}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: system:authenticated}
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: system:unauthenticated}
`), "apply", "-f", "-")
	return err
}

func (e *environment) startConcierge(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	configFile := filepath.Join(e.dir, "concierge.yaml")
	config := fmt.Sprintf(`aggregatedAPIServerPort: %d
names:
  servingCertificateSecret: pinniped-concierge-api-tls-serving-certificate
  credentialIssuer: pinniped-concierge-config
  apiService: %s
log:
  level: %s
signer:
  certificateFile: %s
  privateKeyFile: %s
`, port, apiServiceName, logLevel(), e.cp.ClientCACertFile, e.cp.ClientCAKeyFile)
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		return err
	}
	s, err := e.startServer("concierge", filepath.Join(e.binDir, "pinniped-concierge"),
		"--config", configFile, "--kubeconfig", e.cp.KubeconfigPath, "--namespace", conciergeNamespace, "--bind-address", "127.0.0.1")
	if err != nil {
		return err
	}
	e.conciergePID, e.conciergePort = s.cmd.Process.Pid, port

	// The aggregator reaches a local process through an ExternalName Service: it resolves the name
	// itself (aggregator routing is off) and checks the certificate for <service>.<namespace>.svc.
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: apiServiceName, Namespace: conciergeNamespace},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	if _, err := e.kube.CoreV1().Services(conciergeNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, group := range []string{"login.concierge.pinniped.dev", "identity.concierge.pinniped.dev"} {
		as := &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1." + group},
			Spec: apiregistrationv1.APIServiceSpec{
				Group: group, Version: "v1alpha1", GroupPriorityMinimum: 9900, VersionPriority: 15,
				Service: &apiregistrationv1.ServiceReference{Namespace: conciergeNamespace, Name: apiServiceName, Port: ptr.To(int32(port))},
			},
		}
		if _, err := e.aggregator.ApiregistrationV1().APIServices().Create(ctx, as, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// logLevel is debug, to explain failures, except in a load run, where logging would skew the numbers.
func logLevel() string {
	if *load {
		return "info"
	}
	return "debug"
}

func (e *environment) startLocalUserAuthenticator(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	caFile := filepath.Join(e.dir, "local-user-authenticator-ca.pem")
	if _, err := e.startServer("local-user-authenticator", filepath.Join(e.binDir, "local-user-authenticator"),
		"--kubeconfig", e.cp.KubeconfigPath, "--namespace", usersNamespace,
		"--listen-address", "127.0.0.1:"+strconv.Itoa(port), "--ca-bundle-file", caFile); err != nil {
		return err
	}
	e.webhookURL = fmt.Sprintf("https://127.0.0.1:%d/authenticate", port)
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		ca, err := os.ReadFile(caFile)
		if err != nil || len(ca) == 0 {
			return false, nil
		}
		e.webhookCA = ca
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			return false, nil
		}
		_ = conn.Close()
		return true, nil
	})
}

func (e *environment) waitForAPIServices(ctx context.Context) error {
	for _, group := range []string{"login.concierge.pinniped.dev", "identity.concierge.pinniped.dev"} {
		if err := controlplane.WaitForAPIService(ctx, e.cp.RESTConfig(), group, "v1alpha1", 60*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// server is one of our binaries running as a child process.
type server struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (e *environment) startServer(name, path string, args ...string) (*server, error) {
	logPath := filepath.Join(e.dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	s := &server{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(s.done)
	}()
	e.servers = append(e.servers, s)
	return s, nil
}

func (s *server) stop() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

// serverLogs returns the last lines of every server's log, for failure messages.
func (e *environment) serverLogs() string {
	var b strings.Builder
	for _, s := range e.servers {
		data, _ := os.ReadFile(s.log)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		fmt.Fprintf(&b, "\n--- %s log (last lines) ---\n%s", s.name, strings.Join(lines, "\n"))
	}
	return b.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// repoPath resolves a path relative to the repository root; tests run in this package's folder.
func repoPath(rel string) string {
	return filepath.Join("..", "..", "..", rel)
}
