package managed

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/version"

	"sealion.dev/providers"
	"sealion.dev/providers/internal/command"
	"sealion.dev/providers/internal/containerd"
	"sealion.dev/providers/internal/hostlock"
	"sealion.dev/providers/internal/hostproc"
	"sealion.dev/providers/internal/hoststate"
	"sealion.dev/providers/managed/ingress"
	"sealion.dev/providers/managed/loadbalancer"
)

const (
	// CacheEnv names sealion's cache root (default <user cache dir>/sealion), which holds the
	// Kubernetes binaries (kubernetes/<version>/bin) and the cluster images (images/<version>).
	CacheEnv = "SEALION_CACHE"

	defaultWaitTimeout = 3 * time.Minute
	// supervisorStopTimeout bounds the supervisor's orderly shutdown before it is killed.
	supervisorStopTimeout = 90 * time.Second
)

// binaries are the programs the cluster runs from CreateOptions.BinDir.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"}

var (
	_ providers.Provider           = (*provider)(nil)
	_ providers.APIServerRestarter = (*provider)(nil)
)

type provider struct {
	profile   profile
	stateRoot string
	getenv    func(string) string
	run       command.Runner
}

// New returns the provider of simulated clusters of one profile: "gke", "eks", "aks" or "talos-like".
func New(profileName string) (providers.Provider, error) {
	p, err := lookupProfile(profileName)
	if err != nil {
		return nil, err
	}
	return &provider{profile: p, stateRoot: DefaultStateRoot, getenv: os.Getenv}, nil
}

// Info is part of the providers.Provider interface.
func (p *provider) Info() providers.Info {
	return providers.Info{Name: p.profile.name, Capabilities: p.profile.capabilities()}
}

// Create is part of the providers.Provider interface. It starts the cluster's supervisor, a
// detached copy of the running program (which must have called Main), and returns once the
// supervisor reports the cluster usable; the cluster then runs until Delete, whichever process
// calls it.
func (p *provider) Create(ctx context.Context, name string, opts providers.CreateOptions) error {
	fail := func(step string, err error) error {
		return &providers.StepError{Cluster: name, Step: step, Err: err}
	}
	// A programming error, reported before anything is checked or touched.
	if !mainCalled.Load() {
		return fail("check this program can run the cluster supervisor", errNoMain)
	}
	l, err := newLayout(p.stateRoot, name)
	if err != nil {
		return fail("check the cluster name", err)
	}
	if err := providers.CheckHostChangesAllowed(p.profile.name, opts.AllowHostChanges, p.getenv); err != nil {
		return fail("check that host changes are allowed", err)
	}
	if _, err := os.Stat(string(l)); err == nil {
		return fail("check the cluster does not exist", fmt.Errorf("cluster %q already exists (state in %s); delete it first", name, l))
	}
	cfg, err := p.clusterConfig(name, opts)
	if err != nil {
		return fail("find binaries and images", err)
	}
	// The supervisor holds the host lock for the cluster's whole life: it inherits the locked file.
	lock, err := hostlock.Acquire(ctx, hostlock.DefaultPath)
	if err != nil {
		return fail("take the host lock", err)
	}
	pid, err := p.prepareAndStart(l, cfg, lock.File())
	_ = lock.Close()
	if err != nil {
		return p.failed(ctx, l, name, "start the cluster supervisor", err, opts.Retain)
	}
	if step, err := waitForSupervisor(ctx, pid); err != nil {
		return p.failed(ctx, l, name, step, err, opts.Retain)
	}
	return nil
}

// clusterConfig resolves the options into what the supervisor needs.
func (p *provider) clusterConfig(name string, opts providers.CreateOptions) (clusterConfig, error) {
	cfg := clusterConfig{
		Name:              name,
		Profile:           p.profile.name,
		KubernetesVersion: opts.KubernetesVersion,
		BinDir:            opts.BinDir,
		NodeName:          p.profile.nodeName(name),
		WaitTimeout:       opts.WaitTimeout,
	}
	if cfg.KubernetesVersion == "" {
		cfg.KubernetesVersion = providers.DefaultKubernetesVersion
	}
	if _, err := version.ParseGeneric(cfg.KubernetesVersion); err != nil {
		return cfg, fmt.Errorf("Kubernetes version %q: %w", cfg.KubernetesVersion, err)
	}
	if cfg.WaitTimeout == 0 {
		cfg.WaitTimeout = defaultWaitTimeout
	}
	cache, err := cacheDir(p.getenv)
	if err != nil {
		return cfg, err
	}
	if cfg.BinDir == "" {
		cfg.BinDir = filepath.Join(cache, "kubernetes", cfg.KubernetesVersion, "bin")
	}
	cfg.ImagesDir = filepath.Join(cache, "images", cfg.KubernetesVersion)
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, b)); err != nil {
			return cfg, fmt.Errorf("Kubernetes binary missing (run `make kube-binaries`): %w", err)
		}
	}
	for _, a := range []string{pauseArchive, corednsArchive} {
		if _, err := os.Stat(filepath.Join(cfg.ImagesDir, a)); err != nil {
			return cfg, fmt.Errorf("cluster image missing (run `make images`): %w", err)
		}
	}
	if cfg.HostIP, err = providers.HostIPv4(); err != nil {
		return cfg, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return cfg, err
	}
	cfg.EtcdClientPort, cfg.EtcdPeerPort = ports[0], ports[1]
	return cfg, nil
}

// prepareAndStart records the host's state, writes the configuration and starts the supervisor,
// detached in its own session so that it outlives this program.
func (p *provider) prepareAndStart(l layout, cfg clusterConfig, lockFile *os.File) (*supervisorProcess, error) {
	if err := os.MkdirAll(l.logsDir(), 0o700); err != nil {
		return nil, fmt.Errorf("creating the cluster's state folder: %w", err)
	}
	snap, err := hoststate.Take()
	if err != nil {
		return nil, fmt.Errorf("recording the host's state: %w", err)
	}
	if err := snap.Save(l.snapshotFile()); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(l.configFile(), data, 0o600); err != nil {
		return nil, fmt.Errorf("writing the cluster configuration: %w", err)
	}
	return startSupervisor(l, lockFile)
}

// supervisorProcess is the supervisor as seen by Create: its process and its status pipe.
type supervisorProcess struct {
	cmd    *exec.Cmd
	status *os.File
	log    string
}

func startSupervisor(l layout, lockFile *os.File) (*supervisorProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to start it as the supervisor: %w", err)
	}
	log, err := os.OpenFile(l.logFile("supervisor"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the supervisor's log: %w", err)
	}
	defer log.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	// The state folder in the arguments is the marker clean-up finds the supervisor by.
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        []string{"sealion-managed-cluster-supervisor", l.marker()},
		Env:         append(os.Environ(), supervisorEnv+"="+string(l)),
		Dir:         "/",
		Stdout:      log,
		Stderr:      log,
		ExtraFiles:  []*os.File{w, lockFile}, // statusFD, then the host lock it keeps open
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		r.Close()
		return nil, fmt.Errorf("starting %s as the cluster supervisor: %w", exe, err)
	}
	if err := os.WriteFile(l.pidFile(), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
		_ = cmd.Process.Kill()
		r.Close()
		return nil, fmt.Errorf("writing the supervisor's pid file: %w", err)
	}
	// Reap it when it exits while we still run; after we exit, init does.
	go func() { _ = cmd.Wait() }()
	return &supervisorProcess{cmd: cmd, status: r, log: l.logFile("supervisor")}, nil
}

// waitForSupervisor reads the supervisor's reports until it says the cluster is usable or
// failed, and returns the step that failed. When ctx ends first, the supervisor is stopped.
func waitForSupervisor(ctx context.Context, sp *supervisorProcess) (string, error) {
	defer sp.status.Close()
	stopWatch := context.AfterFunc(ctx, func() { _ = sp.cmd.Process.Signal(syscall.SIGTERM) })
	defer stopWatch()
	step := "start the cluster supervisor"
	sc := bufio.NewScanner(sp.status)
	for sc.Scan() {
		var r report
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return step, fmt.Errorf("reading the supervisor's report %q: %w", sc.Text(), err)
		}
		switch {
		case r.Error != "":
			return r.Step, errors.New(r.Error)
		case r.Ready:
			return "", nil
		case r.Step != "":
			step = r.Step
		}
	}
	if ctx.Err() != nil {
		return step, ctx.Err()
	}
	return step, fmt.Errorf("the supervisor exited without a report (see %s)", sp.log)
}

// failed keeps the logs of a failed Create outside the state folder, deletes the cluster unless
// retain is set, and returns the StepError.
func (p *provider) failed(ctx context.Context, l layout, name, step string, cause error, retain bool) error {
	stepErr := &providers.StepError{Cluster: name, Step: step, Err: cause}
	if dir, err := os.MkdirTemp("", "sealion-"+name+"-logs-"); err == nil {
		if err := p.CollectLogs(ctx, name, dir); err == nil {
			stepErr.LogsDir = dir
		}
	}
	if !retain {
		if err := p.Delete(context.WithoutCancel(ctx), name); err != nil {
			stepErr.Err = errors.Join(cause, fmt.Errorf("deleting the failed cluster: %w", err))
		}
	}
	return stepErr
}

// KubeconfigPath is part of the providers.Provider interface. The kubeconfig has cluster-admin
// rights (system:masters) through a client certificate.
func (p *provider) KubeconfigPath(_ context.Context, name string) (string, error) {
	l, err := newLayout(p.stateRoot, name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(l.adminKubeconfig()); err != nil {
		return "", fmt.Errorf("kubeconfig of cluster %q: %w", name, err)
	}
	return l.adminKubeconfig(), nil
}

// LoadImageArchives is part of the providers.Provider interface: the archives are imported into
// the node's containerd.
func (p *provider) LoadImageArchives(ctx context.Context, name string, archives ...string) error {
	l, err := newLayout(p.stateRoot, name)
	if err != nil {
		return err
	}
	socket := containerdConfig(l, "").Socket()
	if _, err := os.Stat(socket); err != nil {
		return fmt.Errorf("loading images into cluster %q: its containerd is not running: %w", name, err)
	}
	return containerd.ImportImages(ctx, p.run, socket, archives...)
}

// CollectLogs is part of the providers.Provider interface: the component logs (supervisor,
// control plane, containerd, kubelet, kube-proxy) and the pods' logs.
func (p *provider) CollectLogs(_ context.Context, name, dir string) error {
	l, err := newLayout(p.stateRoot, name)
	if err != nil {
		return err
	}
	if err := copyTree(l.logsDir(), dir); err != nil {
		return fmt.Errorf("collecting the logs of cluster %q: %w", name, err)
	}
	if err := copyTree(l.podLogsDir(), filepath.Join(dir, "pods")); err != nil {
		return fmt.Errorf("collecting the pod logs of cluster %q: %w", name, err)
	}
	return nil
}

// Delete is part of the providers.Provider interface. It stops the supervisor (which takes the
// cluster down in order), then removes whatever the cluster left on the host compared with the
// snapshot Create took, and the state folder.
func (p *provider) Delete(ctx context.Context, name string) error {
	l, err := newLayout(p.stateRoot, name)
	if err != nil {
		return err
	}
	if _, err := os.Stat(string(l)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var errs []error
	if err := stopSupervisor(l); err != nil {
		errs = append(errs, err)
	}
	// The supervisor's exit released the host lock; hold it again while the host is restored.
	lock, err := hostlock.Acquire(ctx, hostlock.DefaultPath)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	defer lock.Release()
	snap, err := hoststate.Load(l.snapshotFile())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Create stopped before anything ran.
	case err != nil:
		errs = append(errs, err)
	default:
		if err := hoststate.Restore(ctx, p.run, snap, hoststate.Cluster{Marker: l.marker(), Links: []string{bridgeDevice}}); err != nil {
			errs = append(errs, err)
		}
	}
	// A killed supervisor's controllers left their hosts blocks behind.
	if p.profile.lbMode == loadbalancer.ModeHostname {
		if err := loadbalancer.RemoveHostnames(loadbalancer.DefaultHostsFile); err != nil {
			errs = append(errs, err)
		}
	}
	if p.profile.ingressPassthrough {
		if err := ingress.RemoveHostnames(ingress.DefaultHostsFile); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(string(l)); err != nil {
			errs = append(errs, fmt.Errorf("removing the state folder: %w", err))
		}
		// The parents go too once no cluster is left in them.
		_ = os.Remove(p.stateRoot)
		_ = os.Remove(filepath.Dir(p.stateRoot))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deleting cluster %q (state kept in %s): %w", name, l, err)
	}
	return nil
}

// stopSupervisor sends SIGTERM to the cluster's supervisor and waits for it to finish taking the
// cluster down, killing it after supervisorStopTimeout. Its children die with it (PDEATHSIG).
func stopSupervisor(l layout) error {
	pid, alive, err := supervisorPID(l)
	if err != nil || !alive {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling the supervisor (pid %d): %w", pid, err)
	}
	deadline := time.Now().Add(supervisorStopTimeout)
	for supervisorAlive(l, pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return fmt.Errorf("the supervisor (pid %d) did not stop within %s; killed it (see %s)", pid, supervisorStopTimeout, l.logFile("supervisor"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// supervisorPID reads the supervisor's pid file; alive is false when there is none or the
// process is gone.
func supervisorPID(l layout) (pid int, alive bool, err error) {
	data, err := os.ReadFile(l.pidFile())
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("reading the supervisor's pid file: %w", err)
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, false, fmt.Errorf("parsing the supervisor's pid file %s: %w", l.pidFile(), err)
	}
	return pid, supervisorAlive(l, pid), nil
}

// supervisorAlive reports whether pid runs and is the supervisor of l: the pid may have been
// reused since a crash, and only a process naming the state folder is ours.
func supervisorAlive(l layout, pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), l.marker()) && hostproc.Running(pid)
}

// apiserverStopGrace bounds the kube-apiserver's graceful shutdown before it is killed.
const apiserverStopGrace = 90 * time.Second

// RestartAPIServer is part of the providers.APIServerRestarter interface: the supervisor's
// kube-apiserver child gets SIGTERM, and the supervisor starts it again once it has exited, as it
// does for any control-plane process that exits.
func (p *provider) RestartAPIServer(ctx context.Context, name string) error {
	l, err := newLayout(p.stateRoot, name)
	if err != nil {
		return err
	}
	pid, alive, err := supervisorPID(l)
	if err != nil {
		return err
	}
	if !alive {
		return fmt.Errorf("restarting the kube-apiserver of cluster %q: its supervisor is not running", name)
	}
	children, err := hostproc.ChildrenNamed(pid, "kube-apiserver")
	if err != nil {
		return fmt.Errorf("restarting the kube-apiserver of cluster %q: %w", name, err)
	}
	if len(children) != 1 {
		return fmt.Errorf("restarting the kube-apiserver of cluster %q: the supervisor (pid %d) has %d kube-apiserver processes, want 1", name, pid, len(children))
	}
	if err := hostproc.Terminate(ctx, children[0], apiserverStopGrace); err != nil {
		return fmt.Errorf("restarting the kube-apiserver of cluster %q: %w", name, err)
	}
	return nil
}

func cacheDir(getenv func(string) string) (string, error) {
	if dir := getenv(CacheEnv); dir != "" {
		return dir, nil
	}
	userCache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the user cache directory (set %s): %w", CacheEnv, err)
	}
	return filepath.Join(userCache, "sealion"), nil
}

// freePorts finds n distinct free ports on 127.0.0.1, listening on all of them at once: a port
// released before the next is asked for may be handed out again (etcd once got the same port for
// its clients and its peers, and failed to bind the second).
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// copyTree copies the regular files below src into dst, keeping relative paths; a missing src
// copies nothing.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == src {
			return nil
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
