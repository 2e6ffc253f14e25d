package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"sealion.dev/core/certauthority"
	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	"sealion.dev/core/testing/controlplane"
)

const (
	supervisorNamespace = "pinniped-supervisor"
	defaultTLSSecret    = "pinniped-supervisor-default-tls-certificate"
)

// env is the shared environment: one control plane and one Supervisor for the whole package.
var env *environment

type environment struct {
	cp         *controlplane.ControlPlane
	kube       kubernetes.Interface
	supervisor supervisorclientset.Interface
	dir        string
	// address is where the Supervisor's HTTPS listener is, on 127.0.0.1.
	address string
	// port is its port, which issuer URLs name so that clients connect to it.
	port int
	// httpAddress is its plain HTTP listener, on 127.0.0.1 too.
	httpAddress string
	// apiPort is the port of its aggregated API, on 127.0.0.1.
	apiPort int
	// ca signs every TLS certificate the tests give the Supervisor.
	ca      *certauthority.CA
	process *exec.Cmd
	done    chan struct{}
	logPath string
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping Supervisor integration tests: they start etcd, kube-apiserver and the Supervisor, which -short excludes")
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
		fmt.Fprintf(os.Stderr, "setting up the integration environment: %v%s\n", err, e.serverLog())
		return 1
	}
	env = e
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, e.serverLog())
	}
	return code
}

func setUp(ctx context.Context) (*environment, error) {
	dir, err := os.MkdirTemp("", "supervisor-integration-")
	if err != nil {
		return nil, err
	}
	e := &environment{dir: dir}
	if e.ca, err = certauthority.New("supervisor integration test CA", time.Hour); err != nil {
		return e, err
	}
	binary := filepath.Join(dir, "pinniped-supervisor")
	build := exec.Command("go", "build", "-o", binary, "sealion.dev/servers/supervisor")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return e, fmt.Errorf("go build: %w\n%s", err, out)
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
	if e.supervisor, err = supervisorclientset.NewForConfig(cfg); err != nil {
		return e, err
	}
	if err := e.installCRDs(ctx); err != nil {
		return e, err
	}
	// The namespace, ServiceAccount and RBAC of the install manifests: the Supervisor runs as that
	// ServiceAccount, so the tests also prove its Role is enough.
	for _, f := range []string{"00-namespace.yaml", "01-serviceaccount.yaml", "02-rbac.yaml"} {
		if _, err := e.kubectl(ctx, nil, "apply", "-f", repoPath("servers/supervisor/deploy/"+f)); err != nil {
			return e, err
		}
	}
	if err := e.startSupervisor(ctx, binary); err != nil {
		return e, err
	}
	return e, nil
}

func (e *environment) tearDown() {
	if e.process != nil {
		_ = syscall.Kill(-e.process.Process.Pid, syscall.SIGTERM)
		select {
		case <-e.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-e.process.Process.Pid, syscall.SIGKILL)
			<-e.done
		}
	}
	if e.cp != nil {
		if err := e.cp.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
		}
	}
	_ = os.RemoveAll(e.dir)
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

// installCRDs installs the Supervisor's CRDs from the install manifests, as users do.
func (e *environment) installCRDs(ctx context.Context) error {
	if _, err := e.kubectl(ctx, nil, "apply", "-k", repoPath("servers/supervisor/deploy/crds")); err != nil {
		return err
	}
	_, err := e.kubectl(ctx, nil, "wait", "--for=condition=Established", "--timeout=30s", "crd", "--all")
	return err
}

func (e *environment) startSupervisor(ctx context.Context, binary string) error {
	var apiAddress string
	for _, addr := range []*string{&e.address, &e.httpAddress, &apiAddress} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		*addr = l.Addr().String()
		_ = l.Close()
	}
	_, port, _ := net.SplitHostPort(e.address)
	e.port, _ = strconv.Atoi(port)
	_, port, _ = net.SplitHostPort(apiAddress)
	e.apiPort, _ = strconv.Atoi(port)

	configFile := filepath.Join(e.dir, "pinniped.yaml")
	config := fmt.Sprintf(`names:
  defaultTLSCertificateSecret: %s
labels:
  app: pinniped-supervisor
log:
  level: debug
endpoints:
  https: {network: tcp, address: "%s"}
  http: {network: tcp, address: "%s"}
aggregatedAPIServerPort: %d
`, defaultTLSSecret, e.address, e.httpAddress, e.apiPort)
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		return err
	}
	e.logPath = filepath.Join(e.dir, "supervisor.log")
	logFile, err := os.Create(e.logPath)
	if err != nil {
		return err
	}
	kubeconfig, err := e.serviceAccountKubeconfig()
	if err != nil {
		return err
	}
	cmd := exec.Command(binary, "--config", configFile, "--kubeconfig", kubeconfig, "--namespace", supervisorNamespace, "--bind-address", "127.0.0.1")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return err
	}
	e.process, e.done = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(e.done)
	}()
	// Health is served from the start, with the bootstrap certificate.
	insecure := e.httpClient(nil)
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-e.done:
			return false, fmt.Errorf("the Supervisor exited")
		default:
		}
		resp, err := insecure.Get("https://anything.example.test/healthz")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// serviceAccountKubeconfig writes a kubeconfig that acts as the Supervisor's ServiceAccount (the
// admin credentials impersonating it).
func (e *environment) serviceAccountKubeconfig() (string, error) {
	cfg, err := clientcmd.LoadFromFile(e.cp.KubeconfigPath)
	if err != nil {
		return "", err
	}
	for _, user := range cfg.AuthInfos {
		user.Impersonate = "system:serviceaccount:" + supervisorNamespace + ":pinniped-supervisor"
	}
	path := filepath.Join(e.dir, "supervisor.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// httpClient connects to the Supervisor whatever the URL's host, sending that host as the TLS
// server name (SNI) and Host header, and trusts roots; nil roots skips verification.
func (e *environment) httpClient(roots *x509.CertPool) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tlsConfig := &tls.Config{RootCAs: roots, InsecureSkipVerify: roots == nil} //nolint:gosec // only for the bootstrap probe
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, "tcp", e.address)
			},
			TLSClientConfig: tlsConfig,
		},
	}
}

// serverLog returns the last lines of the Supervisor's log, for failure messages.
func (e *environment) serverLog() string {
	if e == nil || e.logPath == "" {
		return ""
	}
	data, _ := os.ReadFile(e.logPath)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return "\n--- Supervisor log (last lines) ---\n" + strings.Join(lines, "\n")
}

// repoPath resolves a path relative to the repository root; tests run in this package's folder.
func repoPath(rel string) string {
	return filepath.Join("..", "..", "..", rel)
}
