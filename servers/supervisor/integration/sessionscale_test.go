package integration

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"sealion.dev/core/testing/loadrun"
	"sealion.dev/core/testing/metricstest"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
	"sealion.dev/servers/supervisor/internal/sessionpolicy"
)

var loadSessions = flag.Int("load-sessions", 0, "after the load steps, measure the Supervisor with up to this many live sessions (1,000, 10,000, 100,000), then their garbage collection (make bench: 100000)")

// scaleLabel marks the sessions the scale steps add, so that they can be counted and expired.
const scaleLabel = "bench.sealion.dev/scale"

// sessionScale measures the Supervisor as its sessions grow to 1,000, 10,000 and 100,000 (up to
// -load-sessions): its memory, and its token exchange rate, with that many live sessions; then
// how long its own garbage collector takes to delete them all once they have expired, and
// whether the kube-apiserver refused any request meanwhile. The sessions are copies of a real
// login's refresh token record, each under its own name and login ID: the records a Supervisor
// with that many users keeps.
// Each step logs in again (newExchange) just before it measures: an access token lives two
// minutes, less than adding 90,000 sessions takes.
func sessionScale(t *testing.T, newExchange func() func(ctx context.Context, client int) error) {
	t.Helper()
	ctx := context.Background()
	// Unthrottled: 100,000 creations at the client's default 5 a second would take hours.
	cfg := rest.CopyConfig(env.cp.RESTConfig())
	cfg.QPS = -1
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	secrets := kube.CoreV1().Secrets(supervisorNamespace)
	records, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: sessions.TypeLabel + "=refresh-token", Limit: 1})
	if err != nil || len(records.Items) == 0 {
		t.Fatalf("finding a refresh token record to copy: %v (%d found)", err, len(records.Items))
	}
	template := records.Items[0]
	gcAfter := time.Now().Add(sessionpolicy.Default.Max).UTC().Format(time.RFC3339)
	created := 0
	for _, n := range []int{1000, 10000, 100000} {
		if n > *loadSessions {
			break
		}
		if err := parallel(created, n, func(ctx context.Context, i int) error {
			_, err := secrets.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Name:        fmt.Sprintf("pinniped-storage-refresh-token-scale%06d", i),
					Labels:      map[string]string{sessions.TypeLabel: "refresh-token", sessions.RequestIDLabel: fmt.Sprintf("scale-%06d", i), scaleLabel: "true"},
					Annotations: map[string]string{sessions.GarbageCollectAfterAnnotation: gcAfter},
				},
				Type: template.Type,
				Data: template.Data,
			}, metav1.CreateOptions{})
			return err
		}); err != nil {
			t.Fatalf("creating sessions %d to %d: %v", created, n, err)
		}
		created = n
		r := supervisorStep(t, fmt.Sprintf("token exchange with %d sessions", n), 8, newExchange())
		mem := supervisorMemory(t)
		loadrun.Write(os.Stdout, fmt.Sprintf("SupervisorSessions/operation=token-exchange/sessions=%d", n), r.Figures()...)
		loadrun.Write(os.Stdout, fmt.Sprintf("SupervisorSessionsMemory/state=rss/sessions=%d", n), loadrun.Figure{Value: mem.RSS, Unit: loadrun.MiB})
	}
	if created == 0 {
		t.Fatalf("-load-sessions %d: at least 1000", *loadSessions)
	}

	// The garbage collection: every added session expires at once, and the Supervisor's own
	// collector (a sweep every 30s, on the leader) deletes them.
	rejectedBefore := rejectedRequests(t)
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, sessions.GarbageCollectAfterAnnotation, past))
	if err := parallel(0, created, func(ctx context.Context, i int) error {
		_, err := secrets.Patch(ctx, fmt.Sprintf("pinniped-storage-refresh-token-scale%06d", i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil {
		t.Fatalf("expiring the sessions: %v", err)
	}
	var first, last time.Time
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(time.Second) {
		left := countScaleSessions(t)
		if left < created && first.IsZero() {
			first = time.Now()
		}
		if left == 0 {
			last = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d expired sessions still there after 10 minutes", left, created)
		}
	}
	took := last.Sub(first).Seconds()
	loadrun.Write(os.Stdout, fmt.Sprintf("SupervisorGarbageCollection/sessions=%d", created),
		loadrun.Figure{Value: took, Unit: loadrun.Seconds}, loadrun.Figure{Value: float64(created) / max(took, 1), Unit: loadrun.PerSecond})
	loadrun.Write(os.Stdout, "SupervisorGarbageCollection/kube-apiserver-rejections",
		loadrun.Figure{Value: rejectedRequests(t) - rejectedBefore, Unit: loadrun.Rejected})
}

// parallel calls op for i from `from` to `to`, 16 at once, as a tool that creates many objects
// would; it returns the first error.
func parallel(from, to int, op func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(16)
	for i := from; i < to; i++ {
		g.Go(func() error { return op(ctx, i) })
	}
	return g.Wait()
}

func countScaleSessions(t *testing.T) int {
	t.Helper()
	n := 0
	opts := metav1.ListOptions{LabelSelector: scaleLabel + "=true", Limit: 5000}
	for {
		list, err := env.kube.CoreV1().Secrets(supervisorNamespace).List(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		n += len(list.Items)
		if list.Continue == "" {
			return n
		}
		opts.Continue = list.Continue
	}
}

// rejectedRequests is the kube-apiserver's count of requests its priority and fairness refused
// (apiserver_flowcontrol_rejected_requests_total, summed).
func rejectedRequests(t *testing.T) float64 {
	t.Helper()
	all := metricstest.Sum(metricstest.KubeAPIServer(t, env.kube), "apiserver_flowcontrol_rejected_requests_total", func(map[string]string) (string, bool) { return "", true })
	return all[""]
}
