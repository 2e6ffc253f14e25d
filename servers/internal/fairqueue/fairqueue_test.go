package fairqueue

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"
)

func newLimiter(t *testing.T, c Config) *Limiter {
	t.Helper()
	c.Name = t.Name()
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// occupy takes one of l's seats for flow until the first call of the returned release.
func occupy(t *testing.T, l *Limiter, flow string) (release func()) {
	t.Helper()
	running, done := make(chan struct{}), make(chan struct{})
	go l.Do(context.Background(), flow, func() { close(running); <-done })
	select {
	case <-running:
	case <-time.After(10 * time.Second):
		t.Fatal("the first request did not get a seat")
	}
	return sync.OnceFunc(func() { close(done) })
}

func TestConfigIsValidated(t *testing.T) {
	for name, c := range map[string]Config{
		"no seats":           {MaxWait: time.Second},
		"negative queues":    {Concurrency: 1, Queues: -1, MaxWait: time.Second},
		"hand beyond queues": {Concurrency: 1, Queues: 2, HandSize: 3, MaxWait: time.Second},
		"no wait":            {Concurrency: 1},
		"negative length":    {Concurrency: 1, QueueLength: -1, MaxWait: time.Second},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted %+v", name, c)
		}
	}
}

// A burst beyond the seats waits and runs, never more at once than the seats: this is what keeps
// 9 a.m. logins from getting 429s.
func TestBurstWaitsForSeats(t *testing.T) {
	l := newLimiter(t, Config{Concurrency: 3, MaxWait: 10 * time.Second})
	var running, most atomic.Int32
	var ran atomic.Int32
	var wg sync.WaitGroup
	for range 60 {
		wg.Go(func() {
			ok := l.Do(context.Background(), "one client", func() {
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(2 * time.Millisecond)
				running.Add(-1)
			})
			if ok {
				ran.Add(1)
			}
		})
	}
	wg.Wait()
	if ran.Load() != 60 {
		t.Errorf("%d of 60 requests ran, want all", ran.Load())
	}
	if most.Load() > 3 {
		t.Errorf("%d requests ran at once, want at most 3", most.Load())
	}
}

// One client that floods fills only its own queues and is refused at once; another client's
// request waits in a queue of its own and is served before the flood's backlog.
func TestFloodIsRefusedWhileOthersAreServed(t *testing.T) {
	l := newLimiter(t, Config{Concurrency: 1, Queues: 64, QueueLength: 2, HandSize: 1, MaxWait: 10 * time.Second})
	release := occupy(t, l, "flood")

	var mu sync.Mutex
	var order []string
	record := func(name string) func() {
		return func() { mu.Lock(); order = append(order, name); mu.Unlock() }
	}
	var wg sync.WaitGroup
	queued := func(flow, name string) {
		wg.Go(func() {
			if !l.Do(context.Background(), flow, record(name)) {
				t.Errorf("%s was refused, want it queued", name)
			}
		})
	}
	queued("flood", "flood 1")
	queued("flood", "flood 2")
	waitFor(t, func() bool { return l.qs.Dump(false).Waiting == 2 })
	if l.Do(context.Background(), "flood", record("flood 3")) {
		t.Error("a request beyond the flood's full queue ran, want it refused")
	}
	queued("someone else", "someone else")
	waitFor(t, func() bool { return l.qs.Dump(false).Waiting == 3 })
	release()
	wg.Wait()
	if order[len(order)-1] == "someone else" {
		t.Errorf("order %v: the other client waited behind the whole flood", order)
	}
}

func TestWaitIsBounded(t *testing.T) {
	l := newLimiter(t, Config{Concurrency: 1, Queues: 8, QueueLength: 10, HandSize: 2, MaxWait: 50 * time.Millisecond})
	release := occupy(t, l, "a")
	defer release()
	start := time.Now()
	if l.Do(context.Background(), "b", func() { t.Error("ran without a seat") }) {
		t.Error("a request ran while every seat was taken")
	}
	if waited := time.Since(start); waited < 50*time.Millisecond || waited > 5*time.Second {
		t.Errorf("refused after %v, want after MaxWait (50ms)", waited)
	}
}

func TestCanceledWhileWaiting(t *testing.T) {
	l := newLimiter(t, Config{Concurrency: 1, Queues: 8, QueueLength: 10, HandSize: 2, MaxWait: time.Minute})
	release := occupy(t, l, "a")
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if l.Do(ctx, "b", func() { t.Error("ran without a seat") }) {
		t.Error("a canceled request ran")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// A forged forwarded-for header does not make a flood look like many clients.
func TestForwardedForDoesNotSplitAFlood(t *testing.T) {
	l := newLimiter(t, Config{Concurrency: 1, Queues: 64, QueueLength: 1, HandSize: 1, MaxWait: 10 * time.Second})
	release := occupy(t, l, "192.0.2.7")
	defer release()
	h := WithFairQueuing(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), l, l, nil)
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = "192.0.2.7:1234"
			r.Header.Set("X-Forwarded-For", "198.51.100."+string(rune('1'+i)))
			w := httptest.NewRecorder()
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			defer cancel()
			h.ServeHTTP(w, r.WithContext(ctx))
			mu.Lock()
			codes[w.Code]++
			mu.Unlock()
		})
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return codes[http.StatusTooManyRequests] == 4 })
	release()
	wg.Wait()
	if codes[http.StatusOK] != 1 || codes[http.StatusTooManyRequests] != 4 {
		t.Errorf("codes %v, want one request queued and four refused", codes)
	}
}

func TestWithFairQueuing(t *testing.T) {
	reads := newLimiter(t, Config{Concurrency: 1, Queues: 8, QueueLength: 1, HandSize: 1, MaxWait: 20 * time.Millisecond})
	writes := newLimiter(t, Config{Concurrency: 1, Queues: 8, QueueLength: 1, HandSize: 1, MaxWait: 20 * time.Millisecond})
	releaseWrites := occupy(t, writes, "192.0.2.7")
	defer releaseWrites()
	h := WithFairQueuing(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }),
		reads, writes, func(r *http.Request) bool { return r.URL.Query().Get("watch") == "true" })
	serve := func(method, target string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, target, nil)
		r.RemoteAddr = "192.0.2.7:1234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodOptions} {
		if w := serve(method, "/"); w.Code != http.StatusNoContent {
			t.Errorf("%s while the writes are full: %d, want it served through the reads", method, w.Code)
		}
	}
	RegisterMetrics() // component-base metrics count nothing until registered
	before, _ := testutil.GetCounterMetricValue(rejected.WithLabelValues(t.Name()))
	refused := []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, "get", "BREW"}
	for _, method := range refused {
		w := serve(method, "/")
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
			t.Errorf("%s while the writes are full: %d, Retry-After %q, want 429 and 1", method, w.Code, w.Header().Get("Retry-After"))
		}
	}
	if after, _ := testutil.GetCounterMetricValue(rejected.WithLabelValues(t.Name())); after-before != float64(len(refused)) {
		t.Errorf("requests_rejected_total{queue=%q} grew by %v, want %d", t.Name(), after-before, len(refused))
	}
	if w := serve(http.MethodPost, "/?watch=true"); w.Code != http.StatusNoContent {
		t.Errorf("an exempt request while the writes are full: %d, want it served", w.Code)
	}
}

// A handler that panics (net/http's ErrAbortHandler, as the proxy's reverse proxy raises when a
// client goes away) gives its seat back.
func TestPanicFreesTheSeat(t *testing.T) {
	l := newLimiter(t, Config{Concurrency: 1, MaxWait: 50 * time.Millisecond})
	func() {
		defer func() {
			if recover() != http.ErrAbortHandler {
				t.Error("the handler's panic did not reach the caller")
			}
		}()
		l.Do(context.Background(), "a", func() { panic(http.ErrAbortHandler) })
	}()
	if !l.Do(context.Background(), "a", func() {}) {
		t.Error("the seat of the handler that panicked was not given back")
	}
}
