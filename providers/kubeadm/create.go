package kubeadm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sealion.dev/providers"
	"sealion.dev/providers/internal/clusterready"
	"sealion.dev/providers/internal/cni"
	"sealion.dev/providers/internal/command"
	"sealion.dev/providers/internal/containerd"
	"sealion.dev/providers/internal/daemon"
	"sealion.dev/providers/internal/hostlock"
	"sealion.dev/providers/internal/hoststate"
	"sealion.dev/providers/internal/servicenet"
)

// hostPrograms are the host tools a cluster needs, with the Debian package of each.
var hostPrograms = []struct{ program, pkg string }{
	{"containerd", "containerd"},
	{"ctr", "containerd"},
	{"runc", "runc"},
	{"iptables", "iptables"},
	{"ip6tables", "iptables"},
	{"conntrack", "conntrack"},
	{"socat", "socat"},
	{"ethtool", "ethtool"},
	{"ip", "iproute2"},
	{"mount", "mount"},
	{"nsenter", "util-linux"},
}

// kubeadmBinaries must be in the version's binary directory.
var kubeadmBinaries = []string{"kubeadm", "kubelet", "kubectl"}

// creation is the state shared by the steps of one Create.
type creation struct {
	p        *provider
	c        *cluster
	opts     providers.CreateOptions
	run      command.Runner // logs every command to logs/commands.log
	images   []string       // control-plane archives
	expected []string       // image references kubeadm will use
	nodeIP   string
	before   *hoststate.Snapshot
}

type step struct {
	name string
	run  func(ctx context.Context) error
}

// Create is part of the providers.Provider interface.
func (p *provider) Create(ctx context.Context, name string, opts providers.CreateOptions) error {
	fail := func(step string, err error) error { return &providers.StepError{Cluster: name, Step: step, Err: err} }
	l, err := p.layout(name)
	if err != nil {
		return fail("validate name", err)
	}
	if err := providers.CheckHostChangesAllowed(Name, opts.AllowHostChanges, os.Getenv); err != nil {
		return fail("check host-change opt-in", err)
	}
	if opts.KubernetesVersion == "" {
		opts.KubernetesVersion = providers.DefaultKubernetesVersion
	}
	if opts.WaitTimeout == 0 {
		opts.WaitTimeout = defaultWaitTimeout
	}
	p.mu.Lock()
	_, busy := p.clusters[name]
	p.mu.Unlock()
	if busy {
		return fail("prepare cluster directory", fmt.Errorf("%w: %q is running", errClusterExists, name))
	}
	cr := &creation{p: p, c: &cluster{layout: l, state: clusterState{Name: name, Version: opts.KubernetesVersion}}, opts: opts}
	// The host lock comes first: the cluster directory below may belong to a cluster another
	// process is running, and only the lock holder may look at or clear it.
	began := time.Now()
	err = cr.takeLock(ctx)
	p.progress(name, "take host lock", time.Since(began), err)
	if err != nil {
		return fail("take host lock", err)
	}
	prepFail := func(err error) error {
		_ = cr.c.lock.Release()
		return fail("prepare cluster directory", err)
	}
	if err := p.deleteLeftBehind(ctx); err != nil {
		return prepFail(err)
	}
	// Logs of an earlier failed attempt go: this attempt's replace them.
	if err := os.RemoveAll(l.dir); err != nil {
		return prepFail(err)
	}
	if err := os.MkdirAll(l.logsDir(), 0o755); err != nil {
		return prepFail(err)
	}
	cmdLog, err := os.Create(filepath.Join(l.logsDir(), "commands.log"))
	if err != nil {
		return prepFail(err)
	}
	defer cmdLog.Close()

	steps := []step{
		{"find binaries, images and tools", cr.findInputs},
		{"record host state", cr.recordHost},
		{"start containerd", cr.startContainerd},
		{"import control-plane images", cr.importImages},
		{"write CNI configuration", cr.writeCNI},
		{"keep the Service network local", cr.sinkServices},
		{"start kubelet", cr.startKubelet},
		{"kubeadm init", cr.kubeadmInit},
	}
	start := time.Now()
	for _, s := range steps {
		cr.run = runner(cmdLog, cr.c.state.BinDir)
		began := time.Now()
		err := s.run(ctx)
		p.progress(name, s.name, time.Since(began), err)
		if err != nil {
			return cr.fail(s.name, err)
		}
	}
	client, err := clusterready.Client(cr.c.kubeconfig())
	if err != nil {
		return cr.fail("connect to the cluster", err)
	}
	failed := ""
	if err := clusterready.Wait(ctx, client, opts.WaitTimeout, func(step string, took time.Duration, err error) {
		p.progress(name, step, took, err)
		if err != nil {
			failed = step
		}
	}); err != nil {
		return cr.fail(failed, err)
	}
	p.mu.Lock()
	p.clusters[name] = cr.c
	p.mu.Unlock()
	p.progress(name, "cluster ready", time.Since(start), nil)
	return nil
}

// fail keeps the logs, removes what the failed attempt changed unless asked to retain it,
// and says which step failed.
func (cr *creation) fail(stepName string, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	name := cr.c.state.Name
	if cr.before != nil {
		if err := cr.p.collectLogs(ctx, cr.c.layout, cr.c.logsDir()); err != nil {
			fmt.Fprintf(cr.p.opts.Progress, "kubeadm %s: collecting logs after the failure: %v\n", name, err)
		}
	}
	err := &providers.StepError{Cluster: name, Step: stepName, LogsDir: cr.c.logsDir(), Err: cause}
	switch {
	case cr.opts.Retain && cr.before != nil:
		cr.p.mu.Lock()
		cr.p.clusters[name] = cr.c
		cr.p.mu.Unlock()
		fmt.Fprintf(cr.p.opts.Progress, "kubeadm %s: retained after the failure; Delete removes it\n", name)
	case cr.before != nil:
		if terr := cr.p.teardown(ctx, cr.c); terr != nil {
			return errors.Join(err, fmt.Errorf("cleaning up after the failure: %w", terr))
		}
	case cr.c.lock != nil:
		_ = cr.c.lock.Release()
	}
	return err
}

func (cr *creation) findInputs(ctx context.Context) error {
	var problems []string
	missingPkgs := map[string]bool{}
	for _, hp := range hostPrograms {
		if _, err := exec.LookPath(hp.program); err != nil {
			problems = append(problems, hp.program)
			missingPkgs[hp.pkg] = true
		}
	}
	if _, err := os.Stat(filepath.Join(cni.BinDir, "bridge")); err != nil {
		problems = append(problems, filepath.Join(cni.BinDir, "bridge"))
		missingPkgs["containernetworking-plugins"] = true
	}
	if len(problems) > 0 {
		var pkgs []string
		for p := range missingPkgs {
			pkgs = append(pkgs, p)
		}
		return fmt.Errorf("missing on this machine: %s (apt-get install %s)", strings.Join(problems, ", "), strings.Join(pkgs, " "))
	}

	cache, err := cr.p.cacheDir()
	if err != nil {
		return err
	}
	binDir := cr.opts.BinDir
	if binDir == "" {
		binDir = filepath.Join(cache, "kubernetes", cr.opts.KubernetesVersion, "bin")
	}
	for _, b := range kubeadmBinaries {
		if info, err := os.Stat(filepath.Join(binDir, b)); err != nil || info.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%s missing in %s: run `make kube-binaries`", b, binDir)
		}
	}
	cr.c.state.BinDir = binDir
	if cr.images, err = imageArchives(filepath.Join(cache, "images", cr.opts.KubernetesVersion)); err != nil {
		return err
	}
	if cr.nodeIP, err = providers.HostIPv4(); err != nil {
		return err
	}
	params := kubeadmParams{
		ClusterName: cr.c.state.Name, NodeName: cr.c.state.Name + "-control-plane", NodeIP: cr.nodeIP,
		CRISocket: "unix://" + cr.c.socket(), KubernetesVersion: cr.opts.KubernetesVersion,
	}
	cfg, err := params.render()
	if err != nil {
		return err
	}
	if err := os.WriteFile(cr.c.kubeadmConfig(), cfg, 0o600); err != nil {
		return err
	}
	out, err := runner(nil, binDir).Output(ctx, "kubeadm", "config", "images", "list", "--config", cr.c.kubeadmConfig())
	if err != nil {
		return fmt.Errorf("asking kubeadm for its images: %w", err)
	}
	cr.expected = strings.Fields(string(out))
	return saveJSON(cr.c.stateFile(), cr.c.state)
}

func (cr *creation) takeLock(ctx context.Context) error {
	quick, cancel := context.WithTimeout(ctx, time.Second)
	lock, err := hostlock.Acquire(quick, cr.p.opts.LockPath)
	cancel()
	if err != nil {
		fmt.Fprintf(cr.p.opts.Progress, "kubeadm %s: waiting for the host lock %s (another cluster runs on this machine)\n",
			cr.c.state.Name, cr.p.opts.LockPath)
		if lock, err = hostlock.Acquire(ctx, cr.p.opts.LockPath); err != nil {
			return err
		}
	}
	cr.c.lock = lock
	return nil
}

// recordHost refuses a host another cluster left behind or still uses, then snapshots it. A
// copy of the snapshot stays with the logs, to compare the host with after Delete.
func (cr *creation) recordHost(ctx context.Context) error {
	for _, p := range []string{"/etc/kubernetes/manifests", "/var/lib/kubelet/config.yaml", "/var/lib/etcd/member", cr.c.cniFile()} {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("host is not clean: %s exists (left by another cluster?); remove it or run `kubeadm reset -f`", p)
		}
	}
	out, err := cr.run.Output(ctx, "ip", "-4", "route", "show", nodePodSubnet)
	if err != nil {
		return err
	}
	if route := strings.TrimSpace(string(out)); route != "" {
		return fmt.Errorf("the pod network %s is routed already (%s): another cluster runs without the host lock", nodePodSubnet, route)
	}
	snap, err := hoststate.Take()
	if err != nil {
		return err
	}
	for _, path := range []string{cr.c.snapshotFile(), cr.c.logsSnapshotFile()} {
		if err := snap.Save(path); err != nil {
			return err
		}
	}
	cr.before = snap
	return nil
}

func (cr *creation) startContainerd(ctx context.Context) error {
	pause, err := pauseImage(cr.expected)
	if err != nil {
		return err
	}
	// kubeadm's preflight requires forwarding; Delete restores the recorded value.
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		return fmt.Errorf("enabling IPv4 forwarding: %w", err)
	}
	cfg := containerd.Config{Dir: cr.c.containerdDir(), CNIConfDir: cniConfDir, CNIBinDir: cni.BinDir, SandboxImage: pause}
	d, err := containerd.Start(ctx, cfg, filepath.Join(cr.c.logsDir(), "containerd.log"), cr.run)
	if err != nil {
		return err
	}
	cr.c.containerd = d
	return nil
}

func (cr *creation) importImages(ctx context.Context) error {
	if err := containerd.ImportImages(ctx, cr.run, cr.c.socket(), cr.images...); err != nil {
		return err
	}
	present, err := containerd.ImageNames(ctx, cr.run, cr.c.socket())
	if err != nil {
		return err
	}
	if missing := missingImages(cr.expected, present); len(missing) > 0 {
		return fmt.Errorf("%w: the archives do not provide %s (kubeadm expects them; they have %s)",
			ErrImagesMissing, strings.Join(missing, ", "), strings.Join(present, ", "))
	}
	return nil
}

func bridge(l layout) cni.Bridge {
	return cni.Bridge{Network: cniNetwork, Device: bridgeDevice, Subnet: netip.MustParsePrefix(nodePodSubnet), IPAMDataDir: l.ipamDir()}
}

func (cr *creation) writeCNI(context.Context) error {
	data, err := bridge(cr.c.layout).Render()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cniConfDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(cr.c.cniFile(), data, 0o644)
}

func (cr *creation) sinkServices(ctx context.Context) error {
	return servicenet.Sink(ctx, cr.run, serviceSinkDevice, netip.MustParsePrefix(serviceSubnet))
}

func (cr *creation) startKubelet(context.Context) error {
	proc, err := daemon.Start(daemon.Spec{
		Name: "kubelet", LogFile: filepath.Join(cr.c.logsDir(), "kubelet.log"), Restart: true,
		Command: kubeletCommand(filepath.Join(cr.c.state.BinDir, "kubelet")),
	})
	if err != nil {
		return err
	}
	cr.c.kubelet = proc
	return nil
}

// preflightIgnored are kubeadm preflight checks that fail by design here: no systemd unit for
// the kubelet, and swap may be on (the kubelet is told to tolerate it). HTTPProxyCIDR only warns
// about HTTP proxies the cluster's networks would go through (we set none), and kubeadm releases
// such as v1.31.0 built with a newer Go fail it outright: they write the service network's IPv4
// address in brackets, a URL Go's parser now refuses.
var preflightIgnored = []string{"HTTPProxyCIDR", "Service-Kubelet", "Swap", "SystemVerification"}

func kubeadmInitArgs(config string) []string {
	return []string{"init", "--config", config, "--ignore-preflight-errors=" + strings.Join(preflightIgnored, ","), "--v=1"}
}

func (cr *creation) kubeadmInit(ctx context.Context) error {
	if err := cr.run.Run(ctx, "kubeadm", kubeadmInitArgs(cr.c.kubeadmConfig())...); err != nil {
		return err
	}
	data, err := os.ReadFile(adminKubeconfig)
	if err != nil {
		return fmt.Errorf("reading kubeadm's admin kubeconfig: %w", err)
	}
	return os.WriteFile(cr.c.kubeconfig(), data, 0o600)
}

// runner runs commands with binDir first in PATH (kubeadm runs `kubelet --version` from PATH),
// logging them to log when set.
func runner(log io.Writer, binDir string) command.Runner {
	r := command.Runner{Log: log}
	if binDir != "" {
		env := os.Environ()
		for i, kv := range env {
			if strings.HasPrefix(kv, "PATH=") {
				env[i] = "PATH=" + binDir + ":" + strings.TrimPrefix(kv, "PATH=")
			}
		}
		r.Env = env
	}
	return r
}
