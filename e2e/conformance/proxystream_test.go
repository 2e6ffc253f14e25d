package conformance

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/utils/ptr"

	"sealion.dev/core/testing/loadrun"
	"sealion.dev/e2e/steps"
)

const (
	// streamerImage is the byte streamer's image (tools/images streamer), loaded into the cluster
	// for the benchmark.
	streamerImage = "localhost/sealion/streamer-fixture:dev"
	// streamerPort is the port the streamer writes to every connection on.
	streamerPort = 8080
	// streamBytes is what each exec and port-forward transfer carries: enough that setting the
	// stream up is a small part of its time.
	streamBytes = 256 << 20
	// streamRuns is how many transfers each path makes; the median is reported.
	streamRuns = 3
)

// streamerArchive is the streamer image's archive, loaded into the cluster when benchmarking.
func streamerArchive() string { return steps.RepoPath("_output/images/streamer-fixture.tar") }

// startStreamer runs the streamer in ns, lets pinny exec and port-forward to it, and returns its
// pod's name once it is ready.
func startStreamer(ctx context.Context, t *testing.T, kube kubernetes.Interface, ns string) string {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pinny-stream"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec", "pods/portforward"}, Verbs: []string{"get", "create"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pinny-stream"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "pinny"}},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "streamer"},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532)},
			Containers: []corev1.Container{{
				Name:            "streamer",
				Image:           steps.Image(ctx, streamerImage),
				ImagePullPolicy: corev1.PullIfNotPresent,
				Args:            []string{"--listen=:" + strconv.Itoa(streamerPort)},
				Ports:           []corev1.ContainerPort{{ContainerPort: streamerPort}},
			}},
		},
	}
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && podReady(p), nil
	}); err != nil {
		t.Fatalf("the streamer pod never became ready: %v", err)
	}
	return pod.Name
}

// streamProcesses are the processes a stream passes through on this machine, besides the
// streamer and the client (this test): the proxy (in the Concierge), the kube-apiserver, the
// kubelet, which relays to the container runtime's streaming server, and the runtime.
var streamProcesses = []string{streamProxyProcess, "kube-apiserver", "kubelet", "containerd"}

// streamProxyProcess is the process the impersonation proxy runs in.
const streamProxyProcess = "pinniped-concierge"

// streamRates are streamThroughput's results, for each path: the median rate in MB/s, the CPU
// time each of streamProcesses spent per MB, and how busy each group of CPUs ("control-plane",
// "worker", and "proxy" where the proxy has CPUs of its own) was while the path ran (1 when
// saturated): what limited the rate.
type streamRates struct {
	rate     map[string]float64
	cpuPerMB map[string]map[string]time.Duration
	busy     map[string]map[string]float64
}

// streamSample is what streamThroughput reads before and after each transfer.
type streamSample struct {
	at   time.Time
	cpu  map[string]time.Duration
	busy map[int]time.Duration
}

func sampleStream() (streamSample, error) {
	cpu, err := loadrun.CPUOf(streamProcesses...)
	if err != nil {
		return streamSample{}, err
	}
	busy, err := loadrun.CPUBusy()
	return streamSample{at: time.Now(), cpu: cpu, busy: busy}, err
}

// streamThroughput transfers streamBytes streamRuns times with each of transfer's paths, the
// paths in turn so that both see the machine alike, and measures each path on split's CPUs.
func streamThroughput(ctx context.Context, split cpuSplit, paths map[string]func(context.Context) (time.Duration, error)) (streamRates, error) {
	groups := map[string][]int{"control-plane": split.controlPlane, "worker": split.rest}
	if len(split.apart) > 0 {
		groups["proxy"] = split.apart
	}
	rates := map[string][]float64{}
	cpu := map[string]map[string]time.Duration{}
	busy := map[string]map[string]time.Duration{}
	ran := map[string]time.Duration{} // the transfers' whole time, their set-up included
	for range streamRuns {
		for _, name := range slices.Sorted(maps.Keys(paths)) {
			before, err := sampleStream()
			if err != nil {
				return streamRates{}, err
			}
			took, err := paths[name](ctx)
			if err != nil {
				return streamRates{}, fmt.Errorf("%s: %w", name, err)
			}
			after, err := sampleStream()
			if err != nil {
				return streamRates{}, err
			}
			rates[name] = append(rates[name], streamBytes/1e6/took.Seconds())
			ran[name] += after.at.Sub(before.at)
			if cpu[name] == nil {
				cpu[name], busy[name] = map[string]time.Duration{}, map[string]time.Duration{}
			}
			for _, p := range streamProcesses {
				cpu[name][p] += after.cpu[p] - before.cpu[p]
			}
			for group, cpus := range groups {
				for _, c := range cpus {
					busy[name][group] += after.busy[c] - before.busy[c]
				}
			}
		}
	}
	out := streamRates{rate: map[string]float64{}, cpuPerMB: map[string]map[string]time.Duration{}, busy: map[string]map[string]float64{}}
	for name, r := range rates {
		slices.Sort(r)
		out.rate[name] = r[len(r)/2]
		// The CPU counters include the few milliseconds that set each stream up (a port-forward's
		// before its clock starts), a small part of 256 MB's.
		out.cpuPerMB[name], out.busy[name] = map[string]time.Duration{}, map[string]float64{}
		for p, c := range cpu[name] {
			out.cpuPerMB[name][p] = time.Duration(float64(c) / (streamRuns * streamBytes / 1e6))
		}
		// /proc/stat counts in hundredths of a second: a fraction may come out a little over 1.
		for group, b := range busy[name] {
			out.busy[name][group] = b.Seconds() / ran[name].Seconds() / float64(len(groups[group]))
		}
	}
	return out, nil
}

// execTransfer runs the streamer's --write --await-stdin in pod as config's user, as kubectl exec
// does (a WebSocket, falling back to SPDY), and returns how long its streamBytes of stdout took to
// arrive.
//
// The command exits only when its stdin ends, which the client ends once every byte has arrived
// (kubectl exec -i with its input closed). A command that exits with its output still on the way
// to a slow reader can lose the output's tail in Kubernetes itself: the kubelet and the
// kube-apiserver close their connections as soon as they have written the last bytes, and the
// ping that reaches each next (the kube-apiserver's SPDY ping to the kubelet, client-go's
// WebSocket heartbeat, each every 5 s) meets a closed socket, which answers with a reset that
// throws away what it still had queued (docs/performance.md, "How a stream ends"). The
// benchmark measures throughput, so its transfers end only when nothing is left in flight.
func execTransfer(config *rest.Config, ns, pod string) func(context.Context) (time.Duration, error) {
	return func(ctx context.Context) (time.Duration, error) {
		kube, err := kubernetes.NewForConfig(config)
		if err != nil {
			return 0, err
		}
		u := kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{
				Container: "streamer",
				Command:   []string{"/usr/local/bin/streamer-fixture", "--write=" + strconv.Itoa(streamBytes), "--await-stdin"},
				Stdin:     true,
				Stdout:    true,
				Stderr:    true,
			}, scheme.ParameterCodec).URL()
		viaSPDY, err := remotecommand.NewSPDYExecutor(config, http.MethodPost, u)
		if err != nil {
			return 0, err
		}
		viaWebSocket, err := remotecommand.NewWebSocketExecutor(config, http.MethodGet, u.String())
		if err != nil {
			return 0, err
		}
		exec, err := remotecommand.NewFallbackExecutor(viaWebSocket, viaSPDY, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
		if err != nil {
			return 0, err
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stdout := &execOutput{want: streamBytes, all: make(chan struct{})}
		var stderr limitedBuffer
		start := time.Now()
		err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdinUntil{stdout.all, ctx}, Stdout: stdout, Stderr: &stderr})
		took := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("exec: %w (stderr %q)", err, stderr)
		}
		if stdout.n != streamBytes {
			return 0, fmt.Errorf("exec delivered %d bytes, want %d", stdout.n, streamBytes)
		}
		return took, nil
	}
}

// forwardTransfer forwards a local port to the streamer's as config's user, as kubectl
// port-forward does (SPDY tunnelled over a WebSocket, falling back to SPDY), and returns how long
// reading streamBytes through it took, once the forward is set up.
func forwardTransfer(config *rest.Config, ns, pod string) func(context.Context) (time.Duration, error) {
	return func(ctx context.Context) (time.Duration, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		local, err := forwardPort(ctx, config, ns, pod, streamerPort)
		if err != nil {
			return 0, err
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", local)
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		start := time.Now()
		n, err := io.Copy(io.Discard, io.LimitReader(conn, streamBytes))
		took := time.Since(start)
		if err != nil || n != streamBytes {
			return 0, fmt.Errorf("read %d bytes through the forwarded port (%v), want %d", n, err, streamBytes)
		}
		return took, nil
	}
}

// forwardPort forwards a local port to pod's port as config's user, as kubectl port-forward does
// (SPDY over a WebSocket, falling back to SPDY), until ctx ends, and returns the local address.
func forwardPort(ctx context.Context, config *rest.Config, ns, pod string, port int) (string, error) {
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return "", err
	}
	u := kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(config)
	if err != nil {
		return "", err
	}
	viaSPDY := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	viaWebSocket, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, config)
	if err != nil {
		return "", err
	}
	dialer := portforward.NewFallbackDialerForStreaming(viaWebSocket, viaSPDY, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	ready := make(chan struct{})
	fw, err := portforward.NewOnAddressesForStreamingWithContext(ctx, dialer, []string{"127.0.0.1"},
		[]string{"0:" + strconv.Itoa(port)}, ready, io.Discard, io.Discard)
	if err != nil {
		return "", err
	}
	forwarding := make(chan error, 1)
	go func() { forwarding <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-forwarding:
		return "", fmt.Errorf("port-forward: %w", err)
	case <-ctx.Done():
		return "", ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))), nil
}

// execOutput counts an exec's stdout, and closes all once want bytes have arrived.
type execOutput struct {
	n, want int64
	all     chan struct{}
}

func (o *execOutput) Write(p []byte) (int, error) {
	if o.n < o.want && o.n+int64(len(p)) >= o.want {
		close(o.all)
	}
	o.n += int64(len(p))
	return len(p), nil
}

// stdinUntil is an exec's stdin: it sends nothing and ends when done is closed, or ctx ends.
type stdinUntil struct {
	done <-chan struct{}
	ctx  context.Context
}

func (s stdinUntil) Read([]byte) (int, error) {
	select {
	case <-s.done:
	case <-s.ctx.Done():
	}
	return 0, io.EOF
}

// limitedBuffer keeps the first KiB written to it, for an error message.
type limitedBuffer []byte

func (b *limitedBuffer) Write(p []byte) (int, error) {
	*b = append(*b, p[:min(len(p), max(0, 1024-len(*b)))]...)
	return len(p), nil
}

func (b limitedBuffer) String() string { return string(b) }
