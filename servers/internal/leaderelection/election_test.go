package leaderelection

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
)

// Two electors on one Lease of a fake clientset: one leads, the other waits for it; the leader's
// stop hands the Lease over at once, and the stopped one no longer leads. The integration test
// does the same on a real API server, with the clients' writes.
func TestRunHandsTheLeaseOver(t *testing.T) {
	kube := fake.NewClientset()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(identity string) (*Elector, context.CancelFunc, <-chan struct{}) {
		e, err := New(Config{
			Namespace: "ns", Name: "pinniped-supervisor", Identity: identity,
			LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 50 * time.Millisecond,
		}, kube.CoordinationV1())
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); e.Run(runCtx) }()
		t.Cleanup(func() { stop(); <-done })
		return e, stop, done
	}
	waitToLead := func(e *Elector) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return e.IsLeader(), nil
		}); err != nil {
			t.Fatalf("%s never led", e.config.Lock.Identity())
		}
	}

	a, stopA, doneA := start("pod-a")
	waitToLead(a)
	b, _, _ := start("pod-b")
	// Many of b's retries pass; the Lease a renews is not b's to take.
	time.Sleep(500 * time.Millisecond)
	if b.IsLeader() {
		t.Fatal("b leads while a holds the Lease")
	}
	stopA()
	<-doneA
	if a.IsLeader() {
		t.Error("a still leads after it stopped")
	}
	// Well within the LeaseDuration: a released the Lease rather than let it expire.
	waitToLead(b)
	lease, err := kube.CoordinationV1().Leases("ns").Get(ctx, "pinniped-supervisor", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := *lease.Spec.HolderIdentity; h != "pod-b" {
		t.Errorf("the Lease is held by %q, want pod-b", h)
	}
}
