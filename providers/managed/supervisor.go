package managed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"sealion.dev/providers/internal/command"
	"sealion.dev/providers/internal/containerd"
	"sealion.dev/providers/internal/daemon"
	"sealion.dev/providers/managed/ingress"
	"sealion.dev/providers/managed/loadbalancer"
)

// supervisorEnv, set in the environment of a program that calls Main, makes the program the
// supervisor of the cluster whose state folder it names instead of doing its usual work (see the
// package documentation). Create sets it when it starts the supervisor.
const supervisorEnv = "SEALION_MANAGED_CLUSTER_SUPERVISOR"

// statusFD is the descriptor the supervisor reports its progress on, one JSON report a line.
const statusFD = 3

// report is one line of the supervisor's progress: a step it begins, or the outcome.
type report struct {
	Step  string `json:"step,omitempty"`
	Ready bool   `json:"ready,omitempty"`
	Error string `json:"error,omitempty"`
}

const (
	apiserverStartTimeout = 60 * time.Second
	daemonStopGrace       = 10 * time.Second
)

// mainCalled records that the running program called Main, so that Create knows a copy of it
// started as the supervisor will run the supervisor.
var mainCalled atomic.Bool

// errNoMain is Create's answer in a program that never called Main: started as the supervisor,
// such a program would ignore supervisorEnv and do its own work again (run the demo, the tests).
var errNoMain = errors.New("this program cannot run a managed cluster's supervisor: call managed.Main " +
	"(or all.Main of sealion.dev/providers/all, which calls it) first thing in main, or in TestMain of a test package")

// Main is this package's part of main: call it first thing in the main function of every program
// that links this package, and in TestMain of every test package that does, before flags are
// parsed. In the copy of the program that Create starts as a cluster's supervisor (supervisorEnv
// set), Main runs the supervisor and exits once the cluster has stopped or failed to start.
// Otherwise it returns at once and lets Create start supervisors: Create fails in a program that
// never called Main.
func Main() {
	if dir := os.Getenv(supervisorEnv); dir != "" {
		os.Exit(runSupervisor(dir))
	}
	mainCalled.Store(true)
}

// runSupervisor brings the cluster up, reports the outcome on statusFD, then keeps it running
// until SIGTERM or SIGINT, and takes it down in reverse order.
func runSupervisor(dir string) int {
	status := os.NewFile(statusFD, "status")
	enc := json.NewEncoder(status)
	send := func(r report) { _ = enc.Encode(r) }

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	c := &cluster{layout: layout(dir)}
	step, err := c.start(ctx, func(step string) { send(report{Step: step}) })
	if err != nil {
		send(report{Step: step, Error: err.Error()})
		status.Close()
		c.stop()
		return 1
	}
	send(report{Ready: true})
	status.Close()
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "supervisor: stopping the cluster")
	c.stop()
	return 0
}

// cluster is what the supervisor runs.
type cluster struct {
	layout  layout
	config  clusterConfig
	profile profile

	// controlPlane and nodeDaemons are the supervised processes, in start order.
	controlPlane, nodeDaemons []*daemon.Process
	containerd                *containerd.Daemon
	// edges are the controllers standing for what the cloud or the homelab puts in front of the
	// cluster (load balancer, Ingress), stopped first.
	edges []edge
}

// edge is one running controller of the cluster's edge.
type edge struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// runEdge runs a controller of the edge for as long as the supervisor runs.
func (c *cluster) runEdge(name string, run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	e := edge{cancel: cancel, done: make(chan struct{})}
	c.edges = append(c.edges, e)
	go func() {
		defer close(e.done)
		if err := run(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "supervisor: %s controller: %v\n", name, err)
		}
	}()
}

// start runs each step in order, announcing it first; on failure it returns the step's name.
func (c *cluster) start(ctx context.Context, announce func(string)) (string, error) {
	var client kubernetes.Interface
	var images map[string]string // archive file name -> image reference
	steps := []struct {
		name string
		run  func() error
	}{
		{"read the cluster configuration", c.readConfig},
		{"write certificates and configuration", c.writeFiles},
		{"start etcd", func() error { return c.daemon(&c.controlPlane, "etcd", etcdCommand(c.layout, c.config)) }},
		{"start kube-apiserver", func() (err error) {
			if err = c.daemon(&c.controlPlane, "kube-apiserver", apiserverCommand(c.layout, c.config, c.profile)); err != nil {
				return err
			}
			client, err = c.waitForAPIServer(ctx)
			return err
		}},
		{"start kube-controller-manager and kube-scheduler", func() error {
			if err := c.daemon(&c.controlPlane, "kube-controller-manager", controllerManagerCommand(c.layout, c.config, c.profile)); err != nil {
				return err
			}
			return c.daemon(&c.controlPlane, "kube-scheduler", schedulerCommand(c.layout, c.config))
		}},
		{"start containerd", func() (err error) {
			if images, err = c.imageRefs(); err != nil {
				return err
			}
			c.containerd, err = containerd.Start(ctx, containerdConfig(c.layout, images[pauseArchive]), c.layout.logFile("containerd"), command.Runner{})
			return err
		}},
		{"import images", func() error {
			return containerd.ImportImages(ctx, command.Runner{}, c.containerd.Socket(),
				filepath.Join(c.config.ImagesDir, pauseArchive), filepath.Join(c.config.ImagesDir, corednsArchive))
		}},
		{"start kubelet", func() error {
			return c.daemon(&c.nodeDaemons, "kubelet", kubeletCommand(c.layout, c.config, c.profile))
		}},
		{"start kube-proxy", func() error { return c.daemon(&c.nodeDaemons, "kube-proxy", kubeProxyCommand(c.layout, c.config)) }},
		{"install CoreDNS", func() error { return installCoreDNS(ctx, client, images[corednsArchive]) }},
		{"start the load balancer controller", func() error { return c.startLoadBalancer(client) }},
		{"start the Ingress controller", func() error { return c.startIngress(client) }},
		{"wait for a usable cluster", func() error { return c.waitUsable(ctx, client) }},
		{"label the node as a control plane", func() error { return c.labelControlPlane(ctx, client) }},
	}
	for _, s := range steps {
		announce(s.name)
		if err := s.run(); err != nil {
			return s.name, err
		}
	}
	return "", nil
}

func (c *cluster) readConfig() error {
	data, err := os.ReadFile(c.layout.configFile())
	if err != nil {
		return fmt.Errorf("reading the cluster configuration: %w", err)
	}
	if err := json.Unmarshal(data, &c.config); err != nil {
		return fmt.Errorf("parsing %s: %w", c.layout.configFile(), err)
	}
	c.profile, err = lookupProfile(c.config.Profile)
	return err
}

func (c *cluster) writeFiles() error {
	l := c.layout
	if err := writePKI(l, net.ParseIP(c.config.HostIP), c.config.NodeName, c.config.server()); err != nil {
		return err
	}
	// The admin kubeconfig is handed out at the top of the state folder.
	admin, err := os.ReadFile(l.kubeconfigFile("admin"))
	if err != nil {
		return err
	}
	kubeletCfg, err := kubeletConfigFile(l)
	if err != nil {
		return err
	}
	proxyCfg, err := kubeProxyConfigFile(l, c.config)
	if err != nil {
		return err
	}
	conflist, err := bridgeNetwork(l).Render()
	if err != nil {
		return err
	}
	files := []struct {
		path string
		data []byte
	}{
		{l.adminKubeconfig(), admin},
		{filepath.Join(l.kubeletDir(), "config.yaml"), kubeletCfg},
		{l.path("kube-proxy.yaml"), proxyCfg},
		{filepath.Join(l.cniConfDir(), bridgeNetwork(l).FileName()), conflist},
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", filepath.Dir(f.path), err)
		}
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	for _, d := range []string{l.kubeletRootDir(), l.podLogsDir(), l.cniIPAMDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	return nil
}

// daemon starts argv under supervision, restarted when it exits as an init system would, and
// adds it to group.
func (c *cluster) daemon(group *[]*daemon.Process, name string, argv []string) error {
	p, err := daemon.Start(daemon.Spec{
		Name:    name,
		LogFile: c.layout.logFile(name),
		Command: func() ([]string, error) { return argv, nil },
		Restart: true,
	})
	if err != nil {
		return err
	}
	*group = append(*group, p)
	return nil
}

func (c *cluster) imageRefs() (map[string]string, error) {
	refs := map[string]string{}
	for _, a := range []string{pauseArchive, corednsArchive} {
		ref, err := archiveTag(filepath.Join(c.config.ImagesDir, a))
		if err != nil {
			return nil, err
		}
		refs[a] = ref
	}
	return refs, nil
}

// waitForAPIServer returns an admin client once /readyz answers ok.
func (c *cluster) waitForAPIServer(ctx context.Context) (kubernetes.Interface, error) {
	restConfig, err := clientcmd.BuildConfigFromFlags("", c.layout.adminKubeconfig())
	if err != nil {
		return nil, fmt.Errorf("loading the admin kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, apiserverStartTimeout, true, func(ctx context.Context) (bool, error) {
		_, last = client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return last == nil, nil
	})
	if err != nil {
		// A kube-apiserver that refuses its flags exits at once and says why at the end of its log.
		logFile := c.layout.logFile("kube-apiserver")
		logEnd, _ := os.ReadFile(logFile)
		return nil, fmt.Errorf("kube-apiserver not ready at %s: %w (last: %v); the end of %s:\n%s",
			c.config.server(), err, last, logFile, command.Tail(logEnd, 4))
	}
	return client, nil
}

// startLoadBalancer runs the LoadBalancer controller for as long as the supervisor runs, where
// the profile has a cloud load balancer.
func (c *cluster) startLoadBalancer(client kubernetes.Interface) error {
	if c.profile.lbMode == "" {
		return nil
	}
	lb, err := loadbalancer.New(client, loadbalancer.Config{Mode: c.profile.lbMode})
	if err != nil {
		return err
	}
	c.runEdge("load balancer", lb.Run)
	return nil
}

// startIngress runs the TLS-passthrough Ingress controller for as long as the supervisor runs,
// where the profile has one.
func (c *cluster) startIngress(client kubernetes.Interface) error {
	if !c.profile.ingressPassthrough {
		return nil
	}
	ic, err := ingress.New(client, ingress.Config{})
	if err != nil {
		return err
	}
	c.runEdge("Ingress", ic.Run)
	return nil
}

// waitUsable waits for what Create promises: the node Ready, CoreDNS Ready and the default
// ServiceAccount (created by kube-controller-manager), which pods need before they can be created.
func (c *cluster) waitUsable(ctx context.Context, client kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, c.config.WaitTimeout)
	defer cancel()
	checks := []struct {
		what string
		done func(context.Context) (bool, error)
	}{
		{"node " + c.config.NodeName + " Ready", func(ctx context.Context) (bool, error) {
			node, err := client.CoreV1().Nodes().Get(ctx, c.config.NodeName, metav1.GetOptions{})
			if err != nil {
				return false, ignoreNotFound(err)
			}
			return conditionTrue(node.Status.Conditions, corev1.NodeReady), nil
		}},
		{"CoreDNS Ready", func(ctx context.Context) (bool, error) {
			d, err := client.AppsV1().Deployments(dnsNamespace).Get(ctx, dnsDeployment, metav1.GetOptions{})
			if err != nil {
				return false, ignoreNotFound(err)
			}
			return d.Status.ReadyReplicas > 0, nil
		}},
		{"ServiceAccount default/default", func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
			return err == nil, ignoreNotFound(err)
		}},
	}
	for _, check := range checks {
		if err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, check.done); err != nil {
			return fmt.Errorf("waiting for %s (logs in %s): %w", check.what, c.layout.logsDir(), err)
		}
	}
	return nil
}

// controlPlaneRoleLabel marks a control-plane Node; the Concierge's impersonation proxy, in
// mode auto, stays off where a Node carries it.
const controlPlaneRoleLabel = "node-role.kubernetes.io/control-plane"

// labelControlPlane gives the node the control-plane role label where the profile's node is a
// control plane, as Talos labels its control-plane machines through the API.
func (c *cluster) labelControlPlane(ctx context.Context, client kubernetes.Interface) error {
	if !c.profile.controlPlaneNode {
		return nil
	}
	patch := []byte(`{"metadata":{"labels":{"` + controlPlaneRoleLabel + `":""}}}`)
	_, err := client.CoreV1().Nodes().Patch(ctx, c.config.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

func conditionTrue(conds []corev1.NodeCondition, t corev1.NodeConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ignoreNotFound lets a poll go on while an object does not exist yet; other errors are
// transient too while the control plane settles, so they are retried as well.
func ignoreNotFound(err error) error {
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	fmt.Fprintf(os.Stderr, "supervisor: retrying after: %v\n", err)
	return nil
}

// stop takes the cluster down in reverse order: the edge's controllers (which release their
// addresses and hosts entries), the node's daemons, every container, containerd, and the control
// plane. Host state the node left behind (mounts, chains, the bridge) is Delete's to clean up.
func (c *cluster) stop() {
	for _, e := range c.edges {
		e.cancel()
	}
	for _, e := range c.edges {
		<-e.done
	}
	var errs []error
	for i := len(c.nodeDaemons) - 1; i >= 0; i-- {
		errs = append(errs, c.nodeDaemons[i].Stop(daemonStopGrace))
	}
	if c.containerd != nil {
		errs = append(errs, containerd.RemoveAllContainers(context.Background(), command.Runner{}, c.containerd.Socket()))
		errs = append(errs, c.containerd.Stop())
	}
	for i := len(c.controlPlane) - 1; i >= 0; i-- {
		errs = append(errs, c.controlPlane[i].Stop(daemonStopGrace))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "supervisor: stopping the cluster: %v\n", err)
	}
}
