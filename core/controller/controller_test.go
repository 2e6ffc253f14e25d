package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

// recorder is a Sync that records the keys it saw and fails a key while told to.
type recorder struct {
	mu      sync.Mutex
	seen    []string
	failing map[string]bool
	synced  chan string
}

func newRecorder() *recorder {
	return &recorder{failing: map[string]bool{}, synced: make(chan string, 100)}
}

func (r *recorder) sync(_ context.Context, key string) error {
	r.mu.Lock()
	r.seen = append(r.seen, key)
	fail := r.failing[key]
	r.mu.Unlock()
	r.synced <- key
	if fail {
		return errors.New("not yet")
	}
	return nil
}

func (r *recorder) setFailing(key string, fail bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failing[key] = fail
}

// next waits for the next synced key.
func (r *recorder) next(t *testing.T) string {
	t.Helper()
	select {
	case key := <-r.synced:
		return key
	case <-time.After(10 * time.Second):
		t.Fatal("no sync within 10s")
		return ""
	}
}

// none asserts that nothing syncs for a short while.
func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case key := <-r.synced:
		t.Fatalf("unexpected sync of %q", key)
	case <-time.After(200 * time.Millisecond):
	}
}

type world struct {
	kube    *fake.Clientset
	clock   *clocktesting.FakeClock
	rec     *recorder
	c       *Controller
	secrets cache.SharedIndexInformer
	cms     cache.SharedIndexInformer
}

func start(t *testing.T, objs ...*corev1.ConfigMap) *world {
	t.Helper()
	w := &world{kube: fake.NewClientset(), clock: clocktesting.NewFakeClock(time.Unix(1e9, 0)), rec: newRecorder()}
	for _, o := range objs {
		if _, err := w.kube.CoreV1().ConfigMaps("ns").Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(w.kube, 0, informers.WithNamespace("ns"))
	cmLister := factory.Core().V1().ConfigMaps().Lister()
	w.cms = factory.Core().V1().ConfigMaps().Informer()
	w.secrets = factory.Core().V1().Secrets().Informer()
	w.c = New(Options{
		Name: "test",
		Sync: w.rec.sync,
		Keys: func() ([]string, error) {
			list, err := cmLister.ConfigMaps("ns").List(labels.Everything())
			keys := make([]string, 0, len(list))
			for _, cm := range list {
				keys = append(keys, cm.Name)
			}
			return keys, err
		},
		Resync:     time.Minute,
		MinBackoff: time.Second,
		MaxBackoff: 4 * time.Second,
		Clock:      w.clock,
	})
	w.c.Watch(w.cms, ObjectName)
	w.c.Watch(w.secrets, Only(func(obj any) bool { return obj.(*corev1.Secret).Type == "watched" }, w.c.All))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	factory.Start(ctx.Done())
	go func() {
		defer close(done)
		w.c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		factory.Shutdown()
	})
	return w
}

func cm(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
}

func TestFirstSyncCoversEveryKey(t *testing.T) {
	w := start(t, cm("a"), cm("b"))
	got := map[string]bool{w.rec.next(t): true, w.rec.next(t): true}
	// The informer's own add events may sync a key again; the first sync must cover both.
	if !got["a"] || !got["b"] {
		t.Fatalf("first syncs = %v, want a and b", got)
	}
}

func TestEventSyncsTheObjectsKey(t *testing.T) {
	w := start(t)
	w.rec.none(t)
	if _, err := w.kube.CoreV1().ConfigMaps("ns").Create(context.Background(), cm("new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if key := w.rec.next(t); key != "new" {
		t.Fatalf("synced %q, want new", key)
	}
}

func TestOnlyFiltersAndAllEnqueuesEveryKey(t *testing.T) {
	w := start(t, cm("a"))
	drain(t, w.rec, "a")
	create := func(name string, typ corev1.SecretType) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Type: typ}
		if _, err := w.kube.CoreV1().Secrets("ns").Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("ignored", "other")
	w.rec.none(t)
	create("matters", "watched")
	if key := w.rec.next(t); key != "a" {
		t.Fatalf("synced %q, want a", key)
	}
}

func TestFailedSyncIsRetriedWithBackoff(t *testing.T) {
	w := start(t)
	w.rec.setFailing("x", true)
	w.c.Enqueue("x")
	w.rec.next(t)
	waitForRequeues(t, w.c, "x", 1)
	// Not retried before the backoff has passed.
	w.rec.none(t)
	w.clock.Step(time.Second)
	if key := w.rec.next(t); key != "x" {
		t.Fatalf("synced %q, want the retry of x", key)
	}
	// The second failure doubles the delay: one second is not enough.
	waitForRequeues(t, w.c, "x", 2)
	w.rec.setFailing("x", false)
	// Nothing syncs before the clock moves; the quiet spell also lets the retry be scheduled (see
	// waitForRequeues) before the clock is stepped.
	w.rec.none(t)
	w.clock.Step(time.Second)
	w.rec.none(t)
	w.clock.Step(time.Second)
	if key := w.rec.next(t); key != "x" {
		t.Fatalf("synced %q, want the second retry of x", key)
	}
	// Success ends the retries.
	w.clock.Step(30 * time.Second)
	w.rec.none(t)
}

func TestResyncSyncsEveryKey(t *testing.T) {
	w := start(t, cm("a"))
	drain(t, w.rec, "a")
	w.clock.Step(time.Minute)
	if key := w.rec.next(t); key != "a" {
		t.Fatalf("synced %q, want the resync of a", key)
	}
}

func TestSingletonWithoutKeys(t *testing.T) {
	rec := newRecorder()
	c := New(Options{Name: "one", Sync: rec.sync})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	if key := rec.next(t); key != Singleton {
		t.Fatalf("synced %q, want %q", key, Singleton)
	}
	cancel()
	<-done
}

// drain consumes the syncs of key that the start produced (first sync and informer adds).
func drain(t *testing.T, rec *recorder, key string) {
	t.Helper()
	if got := rec.next(t); got != key {
		t.Fatalf("synced %q, want %q", got, key)
	}
	for {
		select {
		case got := <-rec.synced:
			if got != key {
				t.Fatalf("synced %q, want %q", got, key)
			}
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}

// waitForRequeues waits until key has failed n times. The retry is scheduled just after the count
// rises (AddRateLimited counts, then reads the clock), so a test steps the clock only after a
// quiet spell (rec.none): a step in between would move the retry's time along with it.
func waitForRequeues(t *testing.T, c *Controller, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.queue.NumRequeues(key) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%q was not requeued %d times", key, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestEnqueueAfterWaitsOnTheClock(t *testing.T) {
	w := start(t)
	w.c.EnqueueAfter("later", 10*time.Second)
	w.rec.none(t)
	w.clock.Step(9 * time.Second)
	w.rec.none(t)
	w.clock.Step(time.Second)
	if key := w.rec.next(t); key != "later" {
		t.Fatalf("synced %q, want later", key)
	}
}

// Synced turns true once every key that existed at the start has been synced once, a failed sync
// included, and not while one is still waiting for its first.
func TestSynced(t *testing.T) {
	release := make(chan struct{})
	c := New(Options{
		Name: "synced",
		Keys: func() ([]string, error) { return []string{"a", "b"}, nil },
		Sync: func(_ context.Context, key string) error {
			if key == "b" {
				<-release
				return errors.New("invalid, shown in its status")
			}
			return nil
		},
		Workers: 2,
		Clock:   clocktesting.NewFakeClock(time.Unix(1e9, 0)),
	})
	if c.Synced() {
		t.Fatal("Synced before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(200 * time.Millisecond) // a syncs; b waits
	if c.Synced() {
		t.Fatal("Synced while b has not been synced once")
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for !c.Synced() {
		if time.Now().After(deadline) {
			t.Fatal("not Synced 10s after every key's first sync could finish")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
