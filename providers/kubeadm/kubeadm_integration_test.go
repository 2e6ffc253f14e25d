package kubeadm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"sealion.dev/core/testing/testdeps"
	"sealion.dev/providers"
	"sealion.dev/providers/internal/clusterready"
	"sealion.dev/providers/internal/command"
	"sealion.dev/providers/internal/hostlock"
	"sealion.dev/providers/internal/hoststate"
	"sealion.dev/providers/internal/testimage"
)

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestClusterLifecycle creates a real cluster on this machine, runs a pod from a loaded image,
// checks what the Concierge relies on (kube-controller-manager as a pod with its signing flags),
// deletes the cluster and checks the machine is as it was.
func TestClusterLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: creates a real kubeadm cluster on this machine, which -short excludes")
	}
	testdeps.Require(t, providers.CheckHostChangesAllowed(Name, false, os.Getenv))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	const name = "sealion-it"
	p := New(Options{Progress: testWriter{t}})
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
	t.Logf("cluster started in %.1fs", time.Since(began).Seconds())
	kubeconfig, err := p.KubeconfigPath(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	client, err := clusterready.Client(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	state, err := loadState(layout{dir: filepath.Join(defaultWorkDir, name)})
	if err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := command.Runner{}.Output(ctx, filepath.Join(state.BinDir, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}

	t.Run("node runs workloads and keeps the control-plane label", func(t *testing.T) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 1 {
			t.Fatalf("nodes: %v, %v", nodes, err)
		}
		n := nodes.Items[0]
		if _, ok := n.Labels["node-role.kubernetes.io/control-plane"]; !ok {
			t.Errorf("node %s lacks the control-plane label: %v", n.Name, n.Labels)
		}
		if len(n.Spec.Taints) != 0 {
			t.Errorf("node %s is tainted: %v", n.Name, n.Spec.Taints)
		}
	})

	t.Run("kube-controller-manager is a pod with the cluster signing flags", func(t *testing.T) {
		out := kubectl("get", "pods", "-n", "kube-system", "-l", "component=kube-controller-manager",
			"-o", "jsonpath={range .items[*]}{.metadata.name}{' '}{.spec.containers[0].command}{'\\n'}{end}")
		if !strings.Contains(out, "kube-controller-manager-") || !strings.Contains(out, "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt") ||
			!strings.Contains(out, "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key") {
			t.Errorf("kube-controller-manager pod not found with its signing flags:\n%s", out)
		}
	})

	t.Run("pod from a loaded image archive resolves and reaches a Service", func(t *testing.T) {
		const ref = "sealion.test/hello:v1"
		if err := p.LoadImageArchives(ctx, name, testimage.HelloArchive(t, ref)); err != nil {
			t.Fatal(err)
		}
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
		logs := kubectl("logs", "-n", pod.Namespace, pod.Name)
		if err != nil || phase != corev1.PodSucceeded || !strings.Contains(logs, testimage.HelloGreeting) {
			t.Errorf("pod ended %q (%v); logs:\n%s", phase, err, logs)
		}
	})

	t.Run("collects logs", func(t *testing.T) {
		dir := t.TempDir()
		if err := p.CollectLogs(ctx, name, dir); err != nil {
			t.Errorf("CollectLogs: %v", err)
		}
		for _, f := range []string{"kubelet.log", "containerd.log", "commands.log", "cluster/pods.txt"} {
			if info, err := os.Stat(filepath.Join(dir, f)); err != nil || info.Size() == 0 {
				t.Errorf("collected logs lack %s: %v", f, err)
			}
		}
		matches, _ := filepath.Glob(filepath.Join(dir, "pods", "kube-system_kube-controller-manager-*", "kube-controller-manager", "*.log"))
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
	checkHostAsBefore(ctx, t, name)
}

// dyingCreateEnv makes the test binary, in TestMain, the process a killed run was (see
// dieWhileCreating) instead of running the tests.
const dyingCreateEnv = "SEALION_TEST_DIE_WHILE_CREATING"

func TestMain(m *testing.M) {
	if name := os.Getenv(dyingCreateEnv); name != "" {
		dieWhileCreating(name)
	}
	os.Exit(m.Run())
}

// dieWhileCreating starts creating the cluster name and exits with status 3 once the kubelet
// runs, so its daemons die with the process and the host keeps what the cluster changed. Any
// other end exits with status 1.
func dieWhileCreating(name string) {
	p := New(Options{Progress: dieAfter{step: "start kubelet", w: os.Stderr}})
	err := p.Create(context.Background(), name, providers.CreateOptions{})
	fmt.Fprintf(os.Stderr, "Create returned before the kubelet started: %v\n", err)
	os.Exit(1)
}

// dieAfter ends the process, as a kill would, once a progress line says step went well.
type dieAfter struct {
	step string
	w    *os.File
}

func (d dieAfter) Write(p []byte) (int, error) {
	n, err := d.w.Write(p)
	if line := string(p); strings.Contains(line, ": "+d.step+" ") && strings.Contains(line, " ok ") {
		os.Exit(3)
	}
	return n, err
}

// TestFailedCreateKeepsLogsAndCleansUp starts where a killed process left a half-made cluster:
// Create deletes it first. Then its first wait fails right after kubeadm init, and the test checks
// the error names the step, the logs survive, and the machine is as it was before either cluster.
func TestFailedCreateKeepsLogsAndCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: creates a real kubeadm cluster on this machine, which -short excludes")
	}
	testdeps.Require(t, providers.CheckHostChangesAllowed(Name, false, os.Getenv))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const name, dead = "sealion-it-fail", "sealion-it-dead"
	p := New(Options{Progress: testWriter{t}})
	t.Cleanup(func() {
		if err := p.Delete(context.Background(), name); err != nil {
			t.Errorf("deleting the cluster in clean-up: %v", err)
		}
		if err := p.Delete(context.Background(), dead); err != nil {
			t.Errorf("deleting the cluster left behind in clean-up: %v", err)
		}
	})

	dying := exec.CommandContext(ctx, os.Args[0])
	dying.Env = append(os.Environ(), dyingCreateEnv+"="+dead)
	out, err := dying.CombinedOutput()
	if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("the dying process should exit 3 once its kubelet runs, got %v:\n%s", err, out)
	}
	deadDir := layout{dir: filepath.Join(defaultWorkDir, dead)}
	if _, err := os.Stat(deadDir.snapshotFile()); err != nil {
		t.Fatalf("the dying process left no cluster behind: %v", err)
	}

	err = p.Create(ctx, name, providers.CreateOptions{WaitTimeout: time.Nanosecond})
	if _, statErr := os.Stat(deadDir.snapshotFile()); !os.IsNotExist(statErr) {
		t.Errorf("Create did not delete the cluster left behind: %v", statErr)
	}
	var stepErr *providers.StepError
	if !errors.As(err, &stepErr) || !strings.HasPrefix(stepErr.Step, "wait for") {
		t.Fatalf("want a failed wait step, got %v", err)
	}
	t.Logf("Create failed as intended: %v", err)
	for _, f := range []string{"kubelet.log", "containerd.log", "commands.log", "teardown.log", "cluster/pods.txt"} {
		if _, err := os.Stat(filepath.Join(stepErr.LogsDir, f)); err != nil {
			t.Errorf("logs of the failed start lack %s: %v", f, err)
		}
	}
	checkHostAsBefore(ctx, t, name)
	checkHostAsBefore(ctx, t, dead)
}

// checkHostAsBefore compares the host with the snapshot the provider took, under the host lock,
// before the cluster started. It takes the lock too, so no other cluster is running meanwhile.
func checkHostAsBefore(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	lock, err := hostlock.Acquire(ctx, hostlock.DefaultPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release() }()
	l := layout{dir: filepath.Join(defaultWorkDir, name)}
	before, err := hoststate.Load(l.logsSnapshotFile())
	if err != nil {
		t.Fatal(err)
	}
	if left := hoststate.Leftovers(ctx, command.Runner{}, before, hostCluster(l)); len(left) > 0 {
		t.Errorf("the host is not as before the cluster:\n%s", strings.Join(left, "\n"))
	}
}
