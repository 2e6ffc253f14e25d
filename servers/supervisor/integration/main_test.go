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
	"sealion.dev/core/testing/serverbuild"
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
	// binary is the Supervisor built for the tests, which start more replicas of it.
	binary string
	// ca signs every TLS certificate the tests give the Supervisor.
	ca *certauthority.CA
	// The Supervisor every test uses; its issuers name its port.
	*supervisorProcess
}

// supervisorProcess is one replica of the Supervisor, a child process.
type supervisorProcess struct {
	// address is where its HTTPS listener is, on 127.0.0.1.
	address string
	// port is its port, which issuer URLs name so that clients connect to it.
	port int
	// httpAddress is its plain HTTP listener, on 127.0.0.1 too.
	httpAddress string
	// apiPort is the port of its aggregated API, on 127.0.0.1.
	apiPort int
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
	e.binary = filepath.Join(dir, "pinniped-supervisor")
	if err := serverbuild.Build("sealion.dev/servers/supervisor", e.binary); err != nil {
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
	e.supervisorProcess, err = e.startSupervisor(ctx, "supervisor", "")
	if err != nil {
		return e, err
	}
	// /readyz answers 200 once the Supervisor has loaded what the namespace holds.
	return e, e.waitFor(ctx, "/readyz")
}

func (e *environment) tearDown() {
	if e.supervisorProcess != nil {
		e.stop()
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

// startSupervisor starts a replica of the Supervisor named name (for its files in e.dir) on new
// ports and waits until it answers /healthz, which it does from the start, with the bootstrap
// certificate. extraConfig ends its configuration file (YAML keys at the top level).
func (e *environment) startSupervisor(ctx context.Context, name, extraConfig string) (*supervisorProcess, error) {
	p := &supervisorProcess{}
	var apiAddress string
	for _, addr := range []*string{&p.address, &p.httpAddress, &apiAddress} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		*addr = l.Addr().String()
		_ = l.Close()
	}
	_, port, _ := net.SplitHostPort(p.address)
	p.port, _ = strconv.Atoi(port)
	_, port, _ = net.SplitHostPort(apiAddress)
	p.apiPort, _ = strconv.Atoi(port)

	configFile := filepath.Join(e.dir, name+".yaml")
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
%s`, defaultTLSSecret, p.address, p.httpAddress, p.apiPort, extraConfig)
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		return nil, err
	}
	p.logPath = filepath.Join(e.dir, name+".log")
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := e.serviceAccountKubeconfig()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(e.binary, "--config", configFile, "--kubeconfig", kubeconfig, "--namespace", supervisorNamespace, "--bind-address", "127.0.0.1")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	p.process, p.done = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	if err := p.waitFor(ctx, "/healthz"); err != nil {
		p.stop()
		return p, err
	}
	return p, nil
}

// waitFor waits until p answers path with 200, on any host name.
func (p *supervisorProcess) waitFor(ctx context.Context, path string) error {
	insecure := p.httpClient(nil)
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("the Supervisor exited")
		default:
		}
		resp, err := insecure.Get("https://anything.example.test" + path)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// stop ends p as the kubelet would, SIGTERM and then SIGKILL, and waits for it.
func (p *supervisorProcess) stop() {
	_ = syscall.Kill(-p.process.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-p.process.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
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

// httpClient connects to p whatever the URL's host, sending that host as the TLS server name
// (SNI) and Host header, and trusts roots; nil roots skips verification.
func (p *supervisorProcess) httpClient(roots *x509.CertPool) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tlsConfig := &tls.Config{RootCAs: roots, InsecureSkipVerify: roots == nil} //nolint:gosec // only for the bootstrap probe
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, "tcp", p.address)
			},
			TLSClientConfig: tlsConfig,
		},
	}
}

// serverLog returns the last lines of the Supervisor's log, for failure messages.
func (e *environment) serverLog() string {
	if e == nil || e.supervisorProcess == nil {
		return ""
	}
	return e.supervisorProcess.serverLog()
}

// serverLog returns the last lines of p's log.
func (p *supervisorProcess) serverLog() string {
	data, _ := os.ReadFile(p.logPath)
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
