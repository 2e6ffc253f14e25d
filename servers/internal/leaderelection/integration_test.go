package leaderelection

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"sealion.dev/core/testing/controlplane"
)

// TestIntegrationTwoReplicas runs two electors on one Lease of a real kube-apiserver: one leads
// and writes, the other's writes are refused; once the leader stops, the other takes the Lease
// over and writes, and the stopped one writes no more.
func TestIntegrationTwoReplicas(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{}) // skips under -short
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "pinniped-concierge"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	type replica struct {
		elector *Elector
		client  kubernetes.Interface
		stop    context.CancelFunc
		done    chan struct{}
	}
	start := func(identity string) *replica {
		e, err := New(Config{
			Namespace: ns, Name: "pinniped-concierge", Identity: identity,
			// Short, but with a renew deadline a busy machine meets: a's Lease must not lapse.
			LeaseDuration: 5 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: 500 * time.Millisecond,
		}, admin.CoordinationV1())
		if err != nil {
			t.Fatal(err)
		}
		client, err := kubernetes.NewForConfig(e.Wrap(cp.RESTConfig()))
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		r := &replica{elector: e, client: client, stop: stop, done: make(chan struct{})}
		go func() { defer close(r.done); e.Run(runCtx) }()
		t.Cleanup(func() { stop(); <-r.done })
		return r
	}
	write := func(r *replica, name string) error {
		_, err := r.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	waitToLead := func(r *replica) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return r.elector.IsLeader(), nil
		}); err != nil {
			t.Fatalf("%s never led: %v", r.elector.config.Lock.Identity(), err)
		}
	}
	holder := func() string {
		t.Helper()
		lease, err := admin.CoordinationV1().Leases(ns).Get(ctx, "pinniped-concierge", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *lease.Spec.HolderIdentity
	}

	a := start("pod-a")
	waitToLead(a)
	b := start("pod-b")
	// Several renewals of a's Lease pass: b must not take it, nor write, meanwhile.
	time.Sleep(3 * time.Second)
	if b.elector.IsLeader() || !a.elector.IsLeader() || holder() != "pod-a" {
		t.Fatalf("a leads %v, b leads %v, the Lease is held by %q; want a alone", a.elector.IsLeader(), b.elector.IsLeader(), holder())
	}
	if err := write(b, "from-b"); !errors.Is(err, ErrNotLeader) {
		t.Errorf("b's write while a leads: %v, want ErrNotLeader", err)
	}
	if _, err := b.client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("b's read while a leads: %v", err)
	}
	if err := write(a, "from-a"); err != nil {
		t.Errorf("a's write while it leads: %v", err)
	}

	a.stop()
	<-a.done
	if a.elector.IsLeader() {
		t.Error("a still leads after it stopped")
	}
	waitToLead(b)
	if h := holder(); h != "pod-b" {
		t.Errorf("the Lease is held by %q, want pod-b", h)
	}
	if err := write(b, "from-b"); err != nil {
		t.Errorf("b's write once it leads: %v", err)
	}
	if err := write(a, "from-a-again"); !errors.Is(err, ErrNotLeader) {
		t.Errorf("a's write after it stopped: %v, want ErrNotLeader", err)
	}
}
