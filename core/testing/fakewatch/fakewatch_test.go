package fakewatch_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"sealion.dev/core/testing/fakewatch"
)

// A change made right after Wait reaches the informer, however the goroutines are scheduled.
func TestChangeAfterWaitReachesTheInformer(t *testing.T) {
	for range 20 {
		kube := kubefake.NewClientset()
		watches := fakewatch.Record(kube)
		ctx, cancel := context.WithCancel(context.Background())
		factory := kubeinformers.NewSharedInformerFactory(kube, 0)
		lister := factory.Core().V1().Secrets().Lister()
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
		watches.Wait(t, 5*time.Second, "secrets")

		_, err := kube.CoreV1().Secrets("ns").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			got, err := lister.List(labels.Everything())
			return err == nil && len(got) == 1, nil
		}); err != nil {
			t.Fatal("the informer never saw the Secret created after its watch started")
		}
		cancel()
		factory.Shutdown()
	}
}

// Wait names what never started.
func TestWaitReportsMissingWatches(t *testing.T) {
	kube := kubefake.NewClientset()
	watches := fakewatch.Record(kube)
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		watches.Wait(ft, 10*time.Millisecond, "secrets")
	}()
	<-done
	if ft.msg == "" {
		t.Fatal("Wait returned although no informer watches secrets")
	}
}

type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	runtime.Goexit()
}
