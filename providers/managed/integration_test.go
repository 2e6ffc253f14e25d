package managed

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"sealion.dev/core/testing/testdeps"
	"sealion.dev/providers"
	"sealion.dev/providers/internal/command"
	"sealion.dev/providers/internal/hoststate"
)

const echoImage = "sealion.test/echoserver:v1"

// TestIntegration creates a gke-profile cluster, runs a pod behind a LoadBalancer Service and
// reaches it from the host, checks that the control plane is invisible, then deletes the
// cluster and checks that the host is as it was.
func TestIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: creates a real cluster on this machine, which -short excludes")
	}
	testdeps.Require(t, providers.CheckHostChangesAllowed("gke", false, nil))
	if os.Geteuid() != 0 {
		testdeps.Require(t, errors.New("running a kubelet and containerd needs root"))
	}
	p, err := New("gke")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.(*provider).clusterConfig("probe", providers.CreateOptions{})
	testdeps.Require(t, err)
	archive := buildEchoImage(t)

	ctx := context.Background()
	before, err := hoststate.Take()
	if err != nil {
		t.Fatal(err)
	}
	hostsBefore, _ := os.ReadFile("/etc/hosts")

	const name = "it-managed"
	start := time.Now()
	if err := p.Create(ctx, name, providers.CreateOptions{}); err != nil {
		_ = p.Delete(ctx, name)
		t.Fatalf("create: %v", err)
	}
	t.Logf("cluster %q usable in %s", name, time.Since(start).Round(100*time.Millisecond))
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			if err := p.Delete(context.Background(), name); err != nil {
				t.Errorf("delete: %v", err)
			}
		}
	})

	kubeconfig, err := p.KubeconfigPath(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("control plane is not visible", func(t *testing.T) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) != 1 {
			t.Errorf("want one worker node, got %d", len(nodes.Items))
		}
		for _, n := range nodes.Items {
			for label := range n.Labels {
				if strings.HasPrefix(label, "node-role.kubernetes.io/") {
					t.Errorf("node %s has role label %s", n.Name, label)
				}
			}
			if len(n.Spec.Taints) > 0 {
				t.Errorf("node %s has taints %v", n.Name, n.Spec.Taints)
			}
		}
		pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, pod := range pods.Items {
			if strings.HasPrefix(pod.Name, "kube-controller-manager") || pod.Labels["component"] != "" {
				t.Errorf("unexpected control-plane pod %s", pod.Name)
			}
		}
		if _, err := client.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("kube-public/cluster-info: want NotFound, got %v", err)
		}
	})

	t.Run("LoadBalancer Service reaches a pod from the host", func(t *testing.T) {
		if err := p.LoadImageArchives(ctx, name, archive); err != nil {
			t.Fatal(err)
		}
		addr := runEchoBehindLoadBalancer(t, ctx, client)
		var body string
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			resp, err := http.Get("http://" + net.JoinHostPort(addr, "80"))
			if err != nil {
				return false, nil
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
			return true, nil
		})
		if err != nil {
			t.Fatalf("GET http://%s: %v", addr, err)
		}
		if body != "hello from echo\n" {
			t.Errorf("got %q from the load balancer, want the echo pod's greeting", body)
		}
	})

	start = time.Now()
	err = p.Delete(ctx, name)
	deleted = true
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	t.Logf("cluster %q deleted in %s", name, time.Since(start).Round(100*time.Millisecond))

	if left := hoststate.Leftovers(ctx, command.Runner{}, before, hoststate.Cluster{Marker: DefaultStateRoot + "/" + name + "/", Links: []string{bridgeDevice}}); len(left) > 0 {
		t.Errorf("left on the host: %s", strings.Join(left, "; "))
	}
	if _, err := os.Stat(filepath.Join(DefaultStateRoot, name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state folder still there: %v", err)
	}
	if hostsAfter, _ := os.ReadFile("/etc/hosts"); !bytes.Equal(hostsBefore, hostsAfter) {
		t.Errorf("/etc/hosts changed:\nbefore:\n%s\nafter:\n%s", hostsBefore, hostsAfter)
	}
}

// runEchoBehindLoadBalancer starts the echo pod behind a LoadBalancer Service and returns the
// address the load balancer published.
func runEchoBehindLoadBalancer(t *testing.T, ctx context.Context, client kubernetes.Interface) string {
	t.Helper()
	labels := map[string]string{"app": "echo"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "echo", Image: echoImage, ImagePullPolicy: corev1.PullNever,
			Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
		}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.CoreV1().Pods("default").Get(ctx, "echo", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		got, _ := client.CoreV1().Pods("default").Get(ctx, "echo", metav1.GetOptions{})
		t.Fatalf("echo pod not Ready: %v\n%+v", err, got.Status)
	}
	var addr string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.CoreV1().Services("default").Get(ctx, "echo", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if ing := got.Status.LoadBalancer.Ingress; len(ing) > 0 && ing[0].IP != "" {
			addr = ing[0].IP
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the echo Service got no load balancer IP: %v", err)
	}
	return addr
}

// buildEchoImage compiles testdata/echoserver statically and packs it as a docker-archive
// tarball with one layer, as `docker save` would write it.
func buildEchoImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "echoserver")
	build := exec.Command("go", "build", "-o", bin, "./testdata/echoserver")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the echo server: %v\n%s", err, out)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	writeTar(t, &layer, map[string]tarEntry{"echoserver": {data: exe, mode: 0o755}})
	layerSum := sha256.Sum256(layer.Bytes())
	layerDigest := "sha256:" + hex.EncodeToString(layerSum[:])
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": []string{"/echoserver"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
	if err != nil {
		t.Fatal(err)
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := hex.EncodeToString(layerSum[:]) + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{echoImage}, "Layers": []string{layerName}}})
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	writeTar(t, &archive, map[string]tarEntry{
		"manifest.json": {data: manifest, mode: 0o644},
		configName:      {data: config, mode: 0o644},
		layerName:       {data: layer.Bytes(), mode: 0o644},
	})
	path := filepath.Join(dir, "echoserver.tar")
	if err := os.WriteFile(path, archive.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type tarEntry struct {
	data []byte
	mode int64
}

func writeTar(t *testing.T, w io.Writer, entries map[string]tarEntry) {
	t.Helper()
	tw := tar.NewWriter(w)
	for name, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: e.mode, Size: int64(len(e.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}
