package kind

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"sealion.dev/core/testing/testdeps"
	"sealion.dev/providers"
	"sealion.dev/providers/internal/clusterready"
	"sealion.dev/providers/internal/command"
	"sealion.dev/providers/internal/hostlock"
	"sealion.dev/providers/internal/testimage"
)

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestClusterLifecycle creates a real kind cluster, checks what the Concierge relies on and what
// the provider adds (a loaded image runs, ClusterIPs answer from this machine, the host lock is
// held), deletes the cluster and checks that Docker and the host are as they were.
func TestClusterLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: creates a real kind cluster on this machine, which -short excludes")
	}
	testdeps.Require(t, providers.CheckHostChangesAllowed(Name, false, os.Getenv))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	d := docker{run: command.Runner{}}
	testdeps.Require(t, d.ping(ctx))
	requireLocalNodeImage(ctx, t, d)

	const name = "sealion-kind-it"
	p := New(Options{Progress: testWriter{t}})
	before := takeDockerHost(ctx, t, name)
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			if err := p.Delete(context.Background(), name); err != nil {
				t.Errorf("deleting the cluster in clean-up: %v", err)
			}
		}
	})

	began := time.Now()
	if err := p.Create(ctx, name, providers.CreateOptions{}); err != nil {
		t.Fatalf("creating the cluster: %v", err)
	}
	t.Logf("cluster usable in %.1fs", time.Since(began).Seconds())
	if during := takeDockerHost(ctx, t, name); !slices.Equal(during.hosts, before.hosts) {
		t.Errorf("creating the cluster changed %s: before %q, after %q; a user's kind does not, so nothing may need it", etcHosts, before.hosts, during.hosts)
	}
	kubeconfig, err := p.KubeconfigPath(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	client, err := clusterready.Client(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}

	nodeID, err := command.Runner{}.Output(ctx, "docker", "inspect", "--format", "{{.Id}}", nodeContainer(name))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the cluster holds the host lock", func(t *testing.T) {
		quick, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if lock, err := hostlock.Acquire(quick, hostlock.DefaultPath); err == nil {
			_ = lock.Release()
			t.Error("the host lock is free while the cluster runs")
		}
	})

	t.Run("one Ready node that runs workloads, kube-controller-manager a pod with the signing flags", func(t *testing.T) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 1 {
			t.Fatalf("nodes: %v, %v", nodes, err)
		}
		n := nodes.Items[0]
		if _, ok := n.Labels["node-role.kubernetes.io/control-plane"]; !ok || len(n.Spec.Taints) != 0 {
			t.Errorf("node %s: labels %v, taints %v; want the control-plane label and no taint", n.Name, n.Labels, n.Spec.Taints)
		}
		pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component=kube-controller-manager"})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("kube-controller-manager pods: %v, %v", pods, err)
		}
		cmd := strings.Join(pods.Items[0].Spec.Containers[0].Command, " ")
		for _, flag := range []string{"--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt", "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key"} {
			if !strings.Contains(cmd, flag) {
				t.Errorf("kube-controller-manager lacks %s: %s", flag, cmd)
			}
		}
	})

	t.Run("a pod from a loaded image archive resolves and reaches a Service", func(t *testing.T) {
		const ref = "sealion.test/hello:v1"
		loadBegan := time.Now()
		if err := p.LoadImageArchives(ctx, name, testimage.HelloArchive(t, ref)); err != nil {
			t.Fatal(err)
		}
		t.Logf("image archive loaded in %.1fs", time.Since(loadBegan).Seconds())
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: metav1.NamespaceDefault},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "hello", Image: ref, ImagePullPolicy: corev1.PullNever}},
			},
		}
		if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var phase corev1.PodPhase
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			phase = got.Status.Phase
			return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
		})
		logs, lerr := client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil || lerr != nil || phase != corev1.PodSucceeded || !strings.Contains(string(logs), testimage.HelloGreeting) {
			t.Errorf("pod ended %q (%v, %v); logs:\n%s", phase, err, lerr, logs)
		}
	})

	// The node's name, which kind's cluster-info advertises, is left unresolved, as on a user's
	// machine; clients reach the API server at the kubeconfig's address.
	t.Run("this machine reaches the API server at the kubeconfig's address", func(t *testing.T) {
		cfg, err := clientcmd.LoadFromFile(kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		server, err := url.Parse(cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server)
		if err != nil {
			t.Fatal(err)
		}
		if ip := net.ParseIP(server.Hostname()); ip == nil || !ip.IsLoopback() {
			t.Errorf("the kubeconfig's server %s is not a loopback address, as kind's is", server)
		}
		conn, err := net.DialTimeout("tcp", server.Host, 5*time.Second)
		if err != nil {
			t.Fatalf("dialing the API server at %s: %v", server.Host, err)
		}
		conn.Close()
	})

	t.Run("this machine reaches ClusterIPs", func(t *testing.T) {
		svc, err := client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(svc.Spec.ClusterIP, "443"), 5*time.Second)
		if err != nil {
			t.Fatalf("dialing the kubernetes Service at %s: %v", svc.Spec.ClusterIP, err)
		}
		conn.Close()
	})

	t.Run("collects logs", func(t *testing.T) {
		dir := t.TempDir()
		if err := p.CollectLogs(ctx, name, dir); err != nil {
			t.Errorf("CollectLogs: %v", err)
		}
		node := nodeContainer(name)
		for _, f := range []string{"create.log", node + "/kubelet.log", node + "/containerd.log", node + "/journal.log",
			node + "/images.txt", node + "/inspect.json", "cluster/pods.txt"} {
			if info, err := os.Stat(filepath.Join(dir, f)); err != nil || info.Size() == 0 {
				t.Errorf("collected logs lack %s: %v", f, err)
			}
		}
		matches, _ := filepath.Glob(filepath.Join(dir, node, "pods", "kube-system_kube-controller-manager-*", "kube-controller-manager", "*.log"))
		if len(matches) == 0 {
			t.Error("collected logs lack the kube-controller-manager container log")
		}
	})

	began = time.Now()
	if err := p.Delete(ctx, name); err != nil {
		t.Fatalf("deleting the cluster: %v", err)
	}
	deleted = true
	t.Logf("cluster deleted in %.1fs", time.Since(began).Seconds())
	if err := p.Delete(ctx, name); err != nil {
		t.Errorf("deleting the deleted cluster again: %v", err)
	}
	if _, err := p.KubeconfigPath(ctx, name); err == nil {
		t.Error("the deleted cluster still has a kubeconfig")
	}
	after := takeDockerHost(ctx, t, name)
	if diff := before.diff(after); len(diff) > 0 {
		t.Errorf("the host is not as before the cluster:\n%s", strings.Join(diff, "\n"))
	}
	quick, cancelLock := context.WithTimeout(ctx, 5*time.Second)
	defer cancelLock()
	lock, err := hostlock.Acquire(quick, hostlock.DefaultPath)
	if err != nil {
		t.Fatalf("the host lock is still held after Delete: %v", err)
	}
	_ = lock.Release()
	// The kubelet in the node made cgroups below the node container's, which must go with it.
	if left, _ := filepath.Glob("/sys/fs/cgroup/*/docker/" + strings.TrimSpace(string(nodeID))); len(left) > 0 {
		t.Errorf("cgroups of the node container are left: %v", left)
	}
}

// requireLocalNodeImage stops the test (testdeps.Require) unless Docker has a node image for the
// default version: the test never pulls one.
func requireLocalNodeImage(ctx context.Context, t *testing.T, d docker) {
	t.Helper()
	_, err := chooseNodeImage(ctx, "", providers.DefaultKubernetesVersion, d.imagePresent, func(context.Context, string) error {
		return errors.New("this test does not pull")
	})
	if err != nil {
		testdeps.Require(t, fmt.Errorf("no node image for %s in Docker (make kind-node-image ALLOW_HOST_CHANGES=true builds one): %w", providers.DefaultKubernetesVersion, err))
	}
}

// etcHosts is this machine's hosts file, which the provider must leave alone.
const etcHosts = "/etc/hosts"

// dockerHost is what a kind cluster changes on this machine, besides the host lock.
type dockerHost struct {
	containers, networks, volumes, links, routes, mounts, holders, hosts []string
}

func takeDockerHost(ctx context.Context, t *testing.T, cluster string) dockerHost {
	t.Helper()
	lines := func(name string, args ...string) []string {
		out, err := command.Runner{}.Output(ctx, name, args...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(out))
	}
	h := dockerHost{
		containers: lines("docker", "ps", "--all", "--quiet", "--filter", "label=io.x-k8s.kind.cluster="+cluster),
		networks:   lines("docker", "network", "ls", "--format", "{{.Name}}"),
		volumes:    lines("docker", "volume", "ls", "--quiet"),
		routes:     lines("ip", "-4", "route", "show", ServiceSubnet),
	}
	hosts, err := os.ReadFile(etcHosts)
	if err != nil {
		t.Fatal(err)
	}
	h.hosts = strings.Split(string(hosts), "\n")
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifaces {
		// The bridges of Docker networks (other clusters' veth pairs may come and go meanwhile).
		if strings.HasPrefix(i.Name, "br-") {
			h.links = append(h.links, i.Name)
		}
	}
	mounts, err := os.ReadFile("/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(m); len(f) > 1 && (strings.HasPrefix(f[1], "/var/lib/docker/") || strings.HasPrefix(f[1], "/run/docker/")) {
			h.mounts = append(h.mounts, f[1])
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if cmdline, err := os.ReadFile(p); err == nil && strings.Contains(string(cmdline), "wait\x00"+nodeContainer(cluster)) {
			h.holders = append(h.holders, p)
		}
	}
	return h
}

// diff lists what differs from after, per kind of thing.
func (h dockerHost) diff(after dockerHost) []string {
	var out []string
	for _, f := range []struct {
		what          string
		before, after []string
	}{
		{"kind containers", h.containers, after.containers}, {"Docker networks", h.networks, after.networks},
		{"Docker volumes", h.volumes, after.volumes}, {"network bridges", h.links, after.links},
		{"routes to " + ServiceSubnet, h.routes, after.routes}, {"Docker mounts", h.mounts, after.mounts},
		{"lock holders", h.holders, after.holders}, {etcHosts + " lines", h.hosts, after.hosts},
	} {
		b, a := slices.Sorted(slices.Values(f.before)), slices.Sorted(slices.Values(f.after))
		if !slices.Equal(b, a) {
			out = append(out, fmt.Sprintf("%s: before %v, after %v", f.what, b, a))
		}
	}
	return out
}
