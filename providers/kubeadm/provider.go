// Package kubeadm provides single-node clusters made by a real `kubeadm init` on this machine:
// Debian's containerd and runc started as plain processes with our configuration, a CNI bridge,
// a kubelet supervised the way systemd would, control-plane images imported from archives (there
// is no registry), and kubeadm's own kube-proxy and CoreDNS add-ons. The node runs workloads: it
// keeps the control-plane label but not the taint. kube-controller-manager is kubeadm's static
// pod, with the cluster CA's key in /etc/kubernetes/pki and the --cluster-signing-* flags.
//
// The provider changes the host, so it holds the host lock from Create to Delete and refuses to
// run without the caller's opt-in. Delete runs `kubeadm reset` and then puts back everything
// recorded before the cluster started (see the hoststate package); it also works from another
// process after a crash, from what Create saved in the cluster's directory, and Create itself
// deletes first any cluster a process that died left behind.
package kubeadm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"sealion.dev/providers"
	"sealion.dev/providers/internal/containerd"
	"sealion.dev/providers/internal/daemon"
	"sealion.dev/providers/internal/hostlock"
	"sealion.dev/providers/internal/hostproc"
)

const (
	// Name is the provider's name in Info.
	Name = "kubeadm"

	defaultWorkDir     = "/var/tmp/sealion/clusters"
	defaultWaitTimeout = 3 * time.Minute
	bridgeDevice       = "sealion0"
	serviceSinkDevice  = "sealion-svc"
	cniNetwork         = "sealion-pods"
	cniConfDir         = "/etc/cni/net.d"
)

// Options configure the provider. The zero value is usable.
type Options struct {
	// WorkDir holds one directory per cluster (containerd's root and socket, logs, kubeconfig);
	// /var/tmp/sealion/clusters when empty. Keep it short: a unix socket lives below it.
	WorkDir string
	// CacheDir is sealion's cache, with kubernetes/<version>/bin and images/<version>;
	// $SEALION_CACHE, else <user cache dir>/sealion, when empty.
	CacheDir string
	// LockPath is the host lock; hostlock.DefaultPath when empty.
	LockPath string
	// Progress receives one line per step of Create and Delete, with its duration; nil discards.
	Progress io.Writer
}

// New returns the kubeadm provider.
func New(opts Options) providers.Provider {
	if opts.WorkDir == "" {
		opts.WorkDir = defaultWorkDir
	}
	if opts.LockPath == "" {
		opts.LockPath = hostlock.DefaultPath
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	return &provider{opts: opts, clusters: map[string]*cluster{}}
}

var (
	_ providers.Provider           = (*provider)(nil)
	_ providers.APIServerRestarter = (*provider)(nil)
)

type provider struct {
	opts Options

	mu       sync.Mutex
	clusters map[string]*cluster // created by this process and not deleted yet
}

// cluster is one cluster's files and, while this process runs it, its daemons and lock.
type cluster struct {
	layout
	state      clusterState
	lock       *hostlock.Lock
	containerd *containerd.Daemon
	kubelet    *daemon.Process
}

// clusterState is saved in the cluster's directory so another process can delete it.
type clusterState struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	BinDir  string `json:"binDir"`
}

// layout names the files of one cluster.
type layout struct{ dir string }

func (l layout) containerdDir() string { return filepath.Join(l.dir, "containerd") }
func (l layout) logsDir() string       { return filepath.Join(l.dir, "logs") }
func (l layout) kubeconfig() string    { return filepath.Join(l.dir, "kubeconfig") }
func (l layout) snapshotFile() string  { return filepath.Join(l.dir, "host-snapshot.json") }
func (l layout) logsSnapshotFile() string {
	return filepath.Join(l.logsDir(), "host-snapshot.json")
}
func (l layout) stateFile() string     { return filepath.Join(l.dir, "cluster.json") }
func (l layout) kubeadmConfig() string { return filepath.Join(l.dir, "kubeadm.yaml") }
func (l layout) ipamDir() string       { return filepath.Join(l.dir, "cni-ipam") }
func (l layout) socket() string        { return filepath.Join(l.containerdDir(), "containerd.sock") }
func (l layout) cniFile() string       { return filepath.Join(cniConfDir, bridge(l).FileName()) }

// Info is part of the providers.Provider interface.
func (p *provider) Info() providers.Info {
	return providers.Info{Name: Name, Capabilities: providers.Capabilities{
		ChangesHost:                true,
		ImagesLoadable:             true,
		ControlPlaneVisible:        true,
		KubeControllerManagerPod:   true,
		ClusterSigningKeyAvailable: true,
		HasExternalLoadBalancer:    false,
		AnonymousAuthEnabled:       true,
		KubeAPIServerClientSigner:  true,
	}}
}

// KubeconfigPath is part of the providers.Provider interface.
func (p *provider) KubeconfigPath(_ context.Context, name string) (string, error) {
	l, err := p.layout(name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(l.kubeconfig()); err != nil {
		return "", fmt.Errorf("kubeadm cluster %q has no kubeconfig (not created?): %w", name, err)
	}
	return l.kubeconfig(), nil
}

// LoadImageArchives is part of the providers.Provider interface.
func (p *provider) LoadImageArchives(ctx context.Context, name string, archives ...string) error {
	l, err := p.layout(name)
	if err != nil {
		return err
	}
	if _, err := os.Stat(l.socket()); err != nil {
		return fmt.Errorf("loading images into kubeadm cluster %q: containerd is not running: %w", name, err)
	}
	return containerd.ImportImages(ctx, runner(nil, ""), l.socket(), archives...)
}

// apiserverStopGrace bounds the kube-apiserver's graceful shutdown before it is killed.
const apiserverStopGrace = 90 * time.Second

// RestartAPIServer is part of the providers.APIServerRestarter interface: the process of the
// kube-apiserver static pod's container gets SIGTERM, and the kubelet starts the container again
// once it has exited, as after a crash.
func (p *provider) RestartAPIServer(ctx context.Context, name string) error {
	l, err := p.layout(name)
	if err != nil {
		return err
	}
	pids, err := containerd.RunningPIDs(ctx, runner(nil, ""), l.socket(), "kube-apiserver")
	if err != nil {
		return fmt.Errorf("restarting the kube-apiserver of kubeadm cluster %q: %w", name, err)
	}
	if len(pids) != 1 {
		return fmt.Errorf("restarting the kube-apiserver of kubeadm cluster %q: %d running kube-apiserver containers, want 1", name, len(pids))
	}
	if err := hostproc.Terminate(ctx, pids[0], apiserverStopGrace); err != nil {
		return fmt.Errorf("restarting the kube-apiserver of kubeadm cluster %q: %w", name, err)
	}
	return nil
}

var namePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$`)

func (p *provider) layout(name string) (layout, error) {
	if !namePattern.MatchString(name) {
		return layout{}, fmt.Errorf("invalid cluster name %q: use 1 to 32 lower-case letters, digits and '-'", name)
	}
	return layout{dir: filepath.Join(p.opts.WorkDir, name)}, nil
}

func (p *provider) cacheDir() (string, error) {
	if p.opts.CacheDir != "" {
		return p.opts.CacheDir, nil
	}
	if d := os.Getenv("SEALION_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the cache directory (set SEALION_CACHE): %w", err)
	}
	return filepath.Join(d, "sealion"), nil
}

// progress prints one step and its duration.
func (p *provider) progress(cluster, step string, took time.Duration, err error) {
	status := "ok"
	if err != nil {
		status = "FAILED"
	}
	fmt.Fprintf(p.opts.Progress, "kubeadm %s: %-34s %-6s %5.1fs\n", cluster, step, status, took.Seconds())
}

func saveJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

func loadState(l layout) (clusterState, error) {
	var s clusterState
	data, err := os.ReadFile(l.stateFile())
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("parsing %s: %w", l.stateFile(), err)
	}
	return s, nil
}

// errClusterExists means a cluster of that name was created and not deleted.
var errClusterExists = errors.New("cluster exists")
