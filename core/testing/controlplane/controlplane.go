// Package controlplane runs a real etcd and kube-apiserver as child processes for integration
// tests, with all certificates generated in memory, and removes every trace of them on Stop.
//
// The API server is configured like a kubeadm cluster as far as tests of an aggregated API
// server need: client certificates from a cluster CA whose key is exposed, a front-proxy CA
// and proxy client certificate for the aggregation layer, and service account signing keys.
// There is no scheduler or kubelet: pods are stored but never run. A kube-controller-manager runs
// when asked (Options.ControllerManager), with only its CertificateSigningRequest signers.
package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	serviceCIDR = "10.0.0.0/24"
	serviceIP   = "10.0.0.1" // first address of serviceCIDR: the kubernetes Service

	defaultStartTimeout = 5 * time.Minute
	stallWindow         = 60 * time.Second
	stopGrace           = 10 * time.Second
	logTailLines        = 30
)

// Options tunes the control plane. The zero value is a usable default.
type Options struct {
	// DisableAnonymousAuth sets --anonymous-auth=false; anonymous requests are allowed by default,
	// as in a kubeadm cluster, so /healthz-style probes and discovery of public endpoints work.
	DisableAnonymousAuth bool
	// ExtraAPIServerFlags are appended to the kube-apiserver command line ("--name=value").
	// A later flag overrides an earlier one, so these can replace the defaults.
	ExtraAPIServerFlags []string
	// ControllerManager runs kube-controller-manager with its CSR signing controller only, signing
	// for the built-in signers with the cluster CA, as a kubeadm cluster's does.
	ControllerManager bool
	// Signers, when not empty, limits the controller manager to these built-in signers
	// ("kube-apiserver-client", "kubelet-client", "kubelet-serving", "legacy-unknown"): it signs
	// nothing for the others, and requests for them are never issued (as on EKS for
	// kube-apiserver-client).
	Signers []string
	// StartTimeout caps how long Start waits for /readyz while the processes still make
	// progress; 5 minutes when zero. Whatever it is, Start gives up once nothing progressed (no
	// log output, no CPU time, no change of the /readyz answer) for a minute, and at once when a
	// process exits.
	StartTimeout time.Duration
}

// ControlPlane is a running etcd and kube-apiserver. Stop it when done.
type ControlPlane struct {
	// URL is the API server's https URL on 127.0.0.1.
	URL string
	// KubeconfigPath is an admin (system:masters) kubeconfig usable with kubectl.
	KubeconfigPath string
	// KubectlPath is the kubectl binary matching the API server.
	KubectlPath string
	// ClientCACertFile and ClientCAKeyFile are the cluster CA the API server trusts for client
	// certificates; it also signed the serving certificate.
	ClientCACertFile, ClientCAKeyFile string
	// FrontProxyCACertFile is the CA of the aggregator's proxy client certificate
	// (--requestheader-client-ca-file).
	FrontProxyCACertFile string
	// Dir holds data, certificates and the logs etcd.log and kube-apiserver.log; Stop removes it.
	Dir string

	restConfig *rest.Config
	ports      []int      // every port the children listen on
	processes  []*process // in start order; stopped in reverse
	stopOnce   sync.Once
	stopErr    error
}

// Start runs etcd and kube-apiserver and returns once /readyz answers ok.
// On failure nothing is left running and the error says why the wait ended and carries the
// state of each process and the tail of its log.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	if err := ctx.Err(); err != nil {
		// Starting processes only to fail on the first probe would leave empty logs in the error.
		return nil, fmt.Errorf("not starting a control plane: the context given to Start is already done: %w", context.Cause(ctx))
	}
	bins, err := findBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sealion-controlplane-")
	if err != nil {
		return nil, fmt.Errorf("creating control plane directory: %w", err)
	}
	cp := &ControlPlane{Dir: dir, KubectlPath: bins.kubectl}
	if err := cp.start(ctx, bins, opts); err != nil {
		if stopErr := cp.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) start(ctx context.Context, bins *binaries, opts Options) error {
	pkiDir := filepath.Join(cp.Dir, "pki")
	if err := os.Mkdir(pkiDir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", pkiDir, err)
	}
	certs, err := generatePKI(pkiDir)
	if err != nil {
		return fmt.Errorf("generating control plane certificates: %w", err)
	}
	cp.ClientCACertFile, cp.ClientCAKeyFile = certs.caCertFile, certs.caKeyFile
	cp.FrontProxyCACertFile = certs.frontProxyCACertFile

	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	cp.ports = ports
	etcdClientURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	etcdPeerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	apiserverPort := ports[2]
	cp.URL = "https://127.0.0.1:" + strconv.Itoa(apiserverPort)

	cp.restConfig = &rest.Config{
		Host: cp.URL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   certs.caPEM,
			CertData: certs.adminCertPEM,
			KeyData:  certs.adminKeyPEM,
		},
	}
	cp.KubeconfigPath = filepath.Join(cp.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(cp.KubeconfigPath, cp.restConfig); err != nil {
		return err
	}

	etcd, err := startProcess(cp.Dir, "etcd", bins.etcd, []string{
		"--name=default",
		"--data-dir=" + filepath.Join(cp.Dir, "etcd-data"),
		"--listen-client-urls=" + etcdClientURL,
		"--advertise-client-urls=" + etcdClientURL,
		"--listen-peer-urls=" + etcdPeerURL,
		"--initial-advertise-peer-urls=" + etcdPeerURL,
		"--initial-cluster=default=" + etcdPeerURL,
		"--unsafe-no-fsync=true", // data is thrown away; fsync only slows tests down
	})
	if err != nil {
		return err
	}
	cp.processes = append(cp.processes, etcd)

	apiserver, err := startProcess(cp.Dir, "kube-apiserver", bins.apiserver, append(apiserverFlags(cp.Dir, apiserverPort, etcdClientURL, certs, opts), opts.ExtraAPIServerFlags...))
	if err != nil {
		return err
	}
	cp.processes = append(cp.processes, apiserver)

	limit := opts.StartTimeout
	if limit == 0 {
		limit = defaultStartTimeout
	}
	// The error carries the log tails, read here: Start's Stop removes Dir right after.
	if err := cp.waitReady(ctx, limit); err != nil || !opts.ControllerManager {
		return err
	}
	return cp.startControllerManager(ctx, bins, certs, opts.Signers)
}

// startControllerManager runs kube-controller-manager with the CSR signing controller, as the
// admin, and waits until it serves /healthz (it allows that path to anyone).
func (cp *ControlPlane) startControllerManager(ctx context.Context, bins *binaries, certs *pki, signers []string) error {
	if bins.controllerManager == "" {
		return fmt.Errorf("%w: no kube-controller-manager in %s", ErrBinariesMissing, bins.dir)
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + cp.KubeconfigPath,
		"--authentication-kubeconfig=" + cp.KubeconfigPath,
		"--authorization-kubeconfig=" + cp.KubeconfigPath,
		"--controllers=csrsigning",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--cert-dir=" + filepath.Join(cp.Dir, "controller-manager-certs"),
	}
	if len(signers) == 0 {
		args = append(args, "--cluster-signing-cert-file="+certs.caCertFile, "--cluster-signing-key-file="+certs.caKeyFile)
	}
	for _, signer := range signers {
		args = append(args, "--cluster-signing-"+signer+"-cert-file="+certs.caCertFile, "--cluster-signing-"+signer+"-key-file="+certs.caKeyFile)
	}
	kcm, err := startProcess(cp.Dir, "kube-controller-manager", bins.controllerManager, args)
	if err != nil {
		return err
	}
	cp.processes = append(cp.processes, kcm)
	cp.ports = append(cp.ports, ports[0])

	// Its serving certificate is self-signed: only its answer matters here.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a loopback health probe
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	url := "https://127.0.0.1:" + strconv.Itoa(ports[0])
	for {
		err := probeHealthz(ctx, client, url)
		if err == nil {
			return nil
		}
		select {
		case <-kcm.exited:
			return fmt.Errorf("kube-controller-manager exited: %v\n--- last lines of %s ---\n%s", kcm.waitErr, kcm.logFile, kcm.logTail(logTailLines))
		case <-ctx.Done():
			return fmt.Errorf("waiting for kube-controller-manager's /healthz: %w (last: %v)\n--- last lines of %s ---\n%s", ctx.Err(), err, kcm.logFile, kcm.logTail(logTailLines))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func apiserverFlags(dir string, port int, etcdURL string, certs *pki, opts Options) []string {
	return []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The default Service's endpoints would name this loopback address, which kube-apiserver
		// 1.37 refuses to reconcile (earlier ones wrote it); nothing here reaches the API server
		// through them, and no kubelet could route to them.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, "apiserver-certs"), // unused with --tls-cert-file, but keeps the default path clean
		"--etcd-servers=" + etcdURL,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + certs.saPublicKeyFile,
		"--service-account-signing-key-file=" + certs.saPrivateKeyFile,
		"--client-ca-file=" + certs.caCertFile,
		"--tls-cert-file=" + certs.servingCertFile,
		"--tls-private-key-file=" + certs.servingKeyFile,
		"--authorization-mode=RBAC",
		"--anonymous-auth=" + strconv.FormatBool(!opts.DisableAnonymousAuth),
		"--allow-privileged=true",
		// Aggregated API servers are reached through their Service (an ExternalName Service works
		// for a server running as a local process), not through endpoints, which need a kubelet.
		"--enable-aggregator-routing=false",
		"--requestheader-client-ca-file=" + certs.frontProxyCACertFile,
		"--requestheader-allowed-names=" + proxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-uid-headers=X-Remote-Uid",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + certs.proxyClientCertFile,
		"--proxy-client-key-file=" + certs.proxyClientKeyFile,
	}
}

// freePorts reserves n distinct ports on 127.0.0.1 by listening on them at once, then releases
// them for the children to bind. Another process could take one in between; that shows up as a
// start failure with the bind error in the log tail.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func writeKubeconfig(path string, cfg *rest.Config) error {
	const name = "sealion-test"
	kubeconfig := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{name: {Server: cfg.Host, CertificateAuthorityData: cfg.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: name, AuthInfo: name}},
		CurrentContext: name,
	}
	if err := clientcmd.WriteToFile(kubeconfig, path); err != nil {
		return fmt.Errorf("writing admin kubeconfig %s: %w", path, err)
	}
	return nil
}

// waitReady polls /readyz with the admin credentials until it returns 200, or until the start
// watch or ctx ends the wait (see startWatch).
func (cp *ControlPlane) waitReady(ctx context.Context, limit time.Duration) error {
	client, err := rest.HTTPClientFor(cp.restConfig)
	if err != nil {
		return fmt.Errorf("building admin HTTP client: %w", err)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()

	watch := newStartWatch(time.Now(), stallWindow, limit)
	for {
		probeErr := probeReadyz(ctx, client, cp.URL)
		if probeErr == nil {
			return nil
		}
		o := cp.observe(probeErr)
		if err := watch.check(o); err != nil {
			return cp.startFailure(err, o)
		}
		select {
		case <-ctx.Done():
			why := fmt.Errorf("the context given to Start ended %s after the start: %w", secs(time.Since(watch.begin)), context.Cause(ctx))
			if deadline, ok := ctx.Deadline(); ok {
				// A caller that spent its budget before calling Start gets empty logs here.
				why = fmt.Errorf("%w (its deadline left %s for the start)", why, secs(max(deadline.Sub(watch.begin), 0)))
			}
			return cp.startFailure(why, cp.observe(probeErr))
		case <-tick.C:
		}
	}
}

func (cp *ControlPlane) observe(probeErr error) observation {
	o := observation{at: time.Now(), probe: probeErr.Error()}
	for _, p := range cp.processes {
		o.procs = append(o.procs, p.observe(o.at))
	}
	return o
}

// startFailure is the error of a failed start: why the wait ended, the last /readyz answer, each
// process's state and the tail of its log, so that a failure on a busy machine can be told
// apart from a broken process.
func (cp *ControlPlane) startFailure(why error, o observation) error {
	var b strings.Builder
	fmt.Fprintf(&b, "last /readyz answer: %s", o.probe)
	for _, p := range o.procs {
		fmt.Fprintf(&b, "\n  %s", p)
	}
	for i, p := range cp.processes {
		tail := p.logTail(logTailLines)
		if tail == "" {
			tail = fmt.Sprintf("(empty: the process wrote nothing in %s, %s)", secs(o.procs[i].age), cpuSecs(o.procs[i].cpu))
		}
		fmt.Fprintf(&b, "\n--- last lines of %s ---\n%s", p.logFile, tail)
	}
	return fmt.Errorf("waiting for %s/readyz: %w\n%s", cp.URL, why, b.String())
}

func probeReadyz(ctx context.Context, client *http.Client, baseURL string) error {
	return probe(ctx, client, baseURL+"/readyz")
}

func probeHealthz(ctx context.Context, client *http.Client, baseURL string) error {
	return probe(ctx, client, baseURL+"/healthz")
}

func probe(ctx context.Context, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// RESTConfig returns a new admin (system:masters) client configuration.
func (cp *ControlPlane) RESTConfig() *rest.Config {
	return rest.CopyConfig(cp.restConfig)
}

// Stop terminates the processes (SIGTERM, then SIGKILL after a grace period), waits for them,
// and removes Dir. It is safe to call more than once.
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		var errs []error
		for i := len(cp.processes) - 1; i >= 0; i-- {
			errs = append(errs, cp.processes[i].stop(stopGrace))
		}
		if err := os.RemoveAll(cp.Dir); err != nil {
			errs = append(errs, fmt.Errorf("removing control plane directory: %w", err))
		}
		cp.stopErr = errors.Join(errs...)
	})
	return cp.stopErr
}
