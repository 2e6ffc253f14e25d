package kind

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"sealion.dev/providers"
	"sealion.dev/providers/internal/clusterready"
	"sealion.dev/providers/internal/command"
	"sealion.dev/providers/internal/hostlock"
)

// errClusterExists means a kind cluster of that name runs already.
var errClusterExists = errors.New("cluster exists")

// creation is the state shared by the steps of one Create.
type creation struct {
	p       *provider
	l       layout
	opts    providers.CreateOptions
	state   clusterState
	lock    *hostlock.Lock
	log     io.Writer // logs/create.log: commands and the kind library's messages
	created bool      // the kind library made (some of) the nodes
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
	began := time.Now()
	err = p.docker.ping(ctx)
	p.progress(name, "find the Docker engine", time.Since(began), err)
	if err != nil {
		return fail("find the Docker engine", err)
	}
	cr := &creation{p: p, l: l, opts: opts, state: clusterState{Name: name}, log: io.Discard}
	// A running cluster of that name holds the host lock: fail now rather than wait for it.
	began = time.Now()
	err = cr.checkNameFree(ctx)
	p.progress(name, "check the name is free", time.Since(began), err)
	if err != nil {
		return fail("check the name is free", err)
	}
	// The host lock comes before the cluster directory, which may belong to a cluster another
	// process is creating or deleting.
	began = time.Now()
	err = cr.takeLock(ctx)
	p.progress(name, "take host lock", time.Since(began), err)
	if err != nil {
		return fail("take host lock", err)
	}
	if err := cr.prepareDir(); err != nil {
		_ = cr.lock.Release()
		return fail("prepare cluster directory", err)
	}
	logFile, err := os.Create(filepath.Join(l.logsDir(), "create.log"))
	if err != nil {
		_ = cr.lock.Release()
		return fail("prepare cluster directory", err)
	}
	defer logFile.Close()
	cr.log = logFile

	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"find the node image", cr.findNodeImage},
		{"kind create cluster", cr.createCluster},
		{"make the node reachable from here", cr.reachNode},
	}
	start := time.Now()
	for _, s := range steps {
		began := time.Now()
		err := s.run(ctx)
		p.progress(name, s.name, time.Since(began), err)
		if err != nil {
			return cr.fail(s.name, err)
		}
	}
	if step, err := cr.waitUsable(ctx); err != nil {
		return cr.fail(step, err)
	}
	if err := cr.handOverLock(); err != nil {
		return cr.fail("hand the host lock to the cluster", err)
	}
	p.progress(name, "cluster ready", time.Since(start), nil)
	return nil
}

func (cr *creation) takeLock(ctx context.Context) error {
	quick, cancel := context.WithTimeout(ctx, time.Second)
	lock, err := hostlock.Acquire(quick, cr.p.opts.LockPath)
	cancel()
	if err != nil {
		fmt.Fprintf(cr.p.opts.Progress, "kind %s: waiting for the host lock %s (another cluster runs on this machine)\n",
			cr.state.Name, cr.p.opts.LockPath)
		if lock, err = hostlock.Acquire(ctx, cr.p.opts.LockPath); err != nil {
			return err
		}
	}
	cr.lock = lock
	return nil
}

// prepareDir refuses a directory whose cluster was not deleted, and replaces the logs of an
// earlier failed attempt.
func (cr *creation) prepareDir() error {
	if _, err := os.Stat(cr.l.stateFile()); err == nil {
		return fmt.Errorf("%w: %s holds a cluster that was not deleted; delete %q first", errClusterExists, cr.l.dir, cr.state.Name)
	}
	if err := os.RemoveAll(cr.l.dir); err != nil {
		return err
	}
	return os.MkdirAll(cr.l.logsDir(), 0o755)
}

func (cr *creation) run() command.Runner { return command.Runner{Log: cr.log} }

func (cr *creation) checkNameFree(context.Context) error {
	names, err := kindProvider(cr.log).List()
	if err != nil {
		return fmt.Errorf("listing kind clusters: %w", err)
	}
	for _, n := range names {
		if n == cr.state.Name {
			return fmt.Errorf("%w: kind cluster %q runs already (not made by this provider, or left by a crash): delete it first", errClusterExists, n)
		}
	}
	return nil
}

func (cr *creation) findNodeImage(ctx context.Context) error {
	d := docker{run: cr.run()}
	image, err := chooseNodeImage(ctx, cr.p.opts.NodeImage, cr.opts.KubernetesVersion, d.imagePresent, d.pull)
	if err != nil {
		return err
	}
	fmt.Fprintf(cr.p.opts.Progress, "kind %s: node image %s\n", cr.state.Name, image)
	cr.state.NodeImage = image
	return nil
}

// chooseNodeImage picks the node image: the explicit one, else kindest/node:<version> or our local
// build if Docker has either, else kindest/node:<version> pulled. A local build wins over a
// pull, so machines without a registry never try one once `make kind-node-image` ran.
func chooseNodeImage(ctx context.Context, explicit, version string, present func(context.Context, string) (bool, error), pull func(context.Context, string) error) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	upstream := UpstreamNodeImageRepository + ":" + version
	for _, ref := range []string{upstream, LocalNodeImage(version)} {
		ok, err := present(ctx, ref)
		if err != nil {
			return "", err
		}
		if ok {
			return ref, nil
		}
	}
	if err := pull(ctx, upstream); err != nil {
		return "", fmt.Errorf("no node image for Kubernetes %s: Docker has neither %s nor %s, and pulling %s failed "+
			"(build one from our binaries with `make kind-node-image KUBE_VERSION=%s`): %w",
			version, upstream, LocalNodeImage(version), upstream, version, err)
	}
	return upstream, nil
}

// clusterConfig is kind's configuration: one node, which runs workloads, with explicit networks
// (the locally built image's CNI configuration and the host route depend on them).
func clusterConfig() *kindv1alpha4.Cluster {
	return &kindv1alpha4.Cluster{
		TypeMeta: kindv1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Nodes:    []kindv1alpha4.Node{{Role: kindv1alpha4.ControlPlaneRole}},
		// Kubelets from 1.35 on refuse cgroup v1 hosts unless told otherwise (KEP-5573).
		KubeadmConfigPatches: []string{"kind: KubeletConfiguration\nfailCgroupV1: false\n"},
		Networking: kindv1alpha4.Networking{
			PodSubnet:     PodSubnet,
			ServiceSubnet: ServiceSubnet,
		},
	}
}

func (cr *creation) createCluster(context.Context) error {
	cr.created = true
	// The nodes stay when creation fails, so fail can collect their logs; it deletes them then.
	err := kindProvider(cr.log).Create(cr.state.Name,
		kindcluster.CreateWithV1Alpha4Config(clusterConfig()),
		kindcluster.CreateWithNodeImage(cr.state.NodeImage),
		kindcluster.CreateWithRetain(true),
		kindcluster.CreateWithKubeconfigPath(cr.l.kubeconfig()),
		kindcluster.CreateWithDisplayUsage(false),
		kindcluster.CreateWithDisplaySalutation(false),
	)
	if err != nil {
		return withCommandOutput(err)
	}
	return cr.state.save(cr.l.stateFile())
}

// reachNode lets this machine reach the cluster's Services as it reaches a kubeadm cluster's:
// the Service network is routed through the node, whose kube-proxy forwards to them. The node's
// name (the API server's address in kind's cluster-info) is left unresolved, as on any user's
// machine: clients use the kubeconfig's 127.0.0.1 address.
func (cr *creation) reachNode(ctx context.Context) error {
	node := nodeContainer(cr.state.Name)
	networks, err := docker{run: cr.run()}.networksOf(ctx, node)
	if err != nil {
		return err
	}
	cr.state.Networks = networks
	ip, err := nodeIPv4(cr.state.Name, cr.log)
	if err != nil {
		return err
	}
	route := []string{ServiceSubnet, "via", ip}
	if err := cr.run().Run(ctx, "ip", append([]string{"route", "add"}, route...)...); err != nil {
		return fmt.Errorf("routing %s to the node (is it routed already? `ip route show %s`): %w", ServiceSubnet, ServiceSubnet, err)
	}
	cr.state.Route = route
	return cr.state.save(cr.l.stateFile())
}

// waitUsable waits for what Create promises, reporting each wait as a step; on failure it
// returns the step that failed.
func (cr *creation) waitUsable(ctx context.Context) (string, error) {
	client, err := clusterready.Client(cr.l.kubeconfig())
	if err != nil {
		return "connect to the cluster", err
	}
	failed := ""
	err = clusterready.Wait(ctx, client, cr.opts.WaitTimeout, func(step string, took time.Duration, err error) {
		cr.p.progress(cr.state.Name, step, took, err)
		if err != nil {
			failed = step
		}
	})
	return failed, err
}

// handOverLock gives the host lock to a `docker wait` on the node, for the cluster's whole life.
func (cr *creation) handOverLock() error {
	pid, err := startLockHolder(nodeContainer(cr.state.Name), cr.lock.File())
	if err != nil {
		return err
	}
	cr.state.LockHolder = pid
	if err := cr.state.save(cr.l.stateFile()); err != nil {
		return err
	}
	// The holder has the lock now; this process's copy of the file goes.
	return cr.lock.Close()
}

// fail keeps the logs, removes what the failed attempt made unless asked to retain it, and says
// which step failed.
func (cr *creation) fail(step string, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	name := cr.state.Name
	err := &providers.StepError{Cluster: name, Step: step, LogsDir: cr.l.logsDir(), Err: cause}
	if !cr.created {
		_ = cr.lock.Release()
		return err
	}
	if lerr := cr.p.collectLogs(ctx, cr.l, name, cr.l.logsDir()); lerr != nil {
		fmt.Fprintf(cr.p.opts.Progress, "kind %s: collecting logs after the failure: %v\n", name, lerr)
	}
	if cr.opts.Retain {
		if cr.state.LockHolder == 0 {
			if herr := cr.handOverLock(); herr != nil {
				_ = cr.lock.Release()
				return errors.Join(err, herr)
			}
		}
		fmt.Fprintf(cr.p.opts.Progress, "kind %s: retained after the failure; Delete removes it\n", name)
		return err
	}
	derr := cr.p.teardown(ctx, cr.l, cr.state)
	if cr.state.LockHolder == 0 {
		_ = cr.lock.Release()
	}
	if derr != nil {
		return errors.Join(err, fmt.Errorf("cleaning up after the failure: %w", derr))
	}
	return err
}

func nodeContainer(cluster string) string { return cluster + "-control-plane" }

// nodeIPv4 is the control-plane node's address on its Docker network.
func nodeIPv4(cluster string, log io.Writer) (string, error) {
	nodes, err := kindProvider(log).ListInternalNodes(cluster)
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		if n.String() == nodeContainer(cluster) {
			ip, _, err := n.IP()
			if err != nil {
				return "", withCommandOutput(err)
			}
			if ip == "" {
				return "", fmt.Errorf("node %s has no IPv4 address", n)
			}
			return ip, nil
		}
	}
	return "", fmt.Errorf("kind cluster %q has no node %s", cluster, nodeContainer(cluster))
}
