package provider

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingChecker is a SecretChecker on a fake clock whose "bcrypt" accepts data equal to hash and
// counts its calls.
func countingChecker(now *time.Time) (*SecretChecker, *atomic.Int32) {
	var calls atomic.Int32
	c := NewSecretChecker(func() time.Time { return *now })
	c.compare = func(hash, data []byte) error {
		calls.Add(1)
		if string(hash) != string(data) {
			return errors.New("mismatch")
		}
		return nil
	}
	return c, &calls
}

func TestSecretCheckerRemembersSuccesses(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c, calls := countingChecker(&now)
	ctx := context.Background()
	for range 5 {
		if err := c.Compare(ctx, []byte("hash-a"), []byte("hash-a")); err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("5 checks of the right secret ran %d comparisons, want 1", calls.Load())
	}
	for range 3 {
		if err := c.Compare(ctx, []byte("hash-a"), []byte("wrong")); err == nil {
			t.Fatal("a wrong secret passed")
		}
	}
	if calls.Load() != 4 {
		t.Errorf("3 wrong secrets ran %d comparisons in all, want 4: failures are never remembered", calls.Load())
	}
	// The same secret against another hash (the client's secret was replaced) is compared anew.
	if err := c.Compare(ctx, []byte("hash-b"), []byte("hash-a")); err == nil {
		t.Fatal("a secret passed against another hash")
	}
	// Each use extends the memory of a success...
	now = now.Add(verifiedFor - time.Second)
	if err := c.Compare(ctx, []byte("hash-a"), []byte("hash-a")); err != nil || calls.Load() != 5 {
		t.Errorf("used again within %v: %v, %d comparisons; want it remembered", verifiedFor, err, calls.Load())
	}
	now = now.Add(verifiedFor - time.Second)
	if err := c.Compare(ctx, []byte("hash-a"), []byte("hash-a")); err != nil || calls.Load() != 5 {
		t.Errorf("used again within %v of the last use: %v, %d comparisons; want it remembered", verifiedFor, err, calls.Load())
	}
	// ...until it goes unused for verifiedFor.
	now = now.Add(verifiedFor)
	if err := c.Compare(ctx, []byte("hash-a"), []byte("hash-a")); err != nil || calls.Load() != 6 {
		t.Errorf("after %v unused: %v, %d comparisons; want the secret compared again", verifiedFor, err, calls.Load())
	}
}

// A request WithoutNewComparisons gets no comparison, but a secret verified before still passes.
func TestSecretCheckerWithoutNewComparisons(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c, calls := countingChecker(&now)
	blocked := WithoutNewComparisons(context.Background())
	if err := c.Compare(blocked, []byte("hash-a"), []byte("hash-a")); !errors.Is(err, ErrComparisonRefused) {
		t.Errorf("an unverified secret without new comparisons: %v, want ErrComparisonRefused", err)
	}
	if err := c.Compare(blocked, []byte("hash-a"), []byte("guess")); !errors.Is(err, ErrComparisonRefused) {
		t.Errorf("a guess without new comparisons: %v, want ErrComparisonRefused", err)
	}
	if calls.Load() != 0 {
		t.Fatalf("%d comparisons ran for requests without new comparisons", calls.Load())
	}
	if err := c.Compare(context.Background(), []byte("hash-a"), []byte("hash-a")); err != nil {
		t.Fatal(err)
	}
	if err := c.Compare(blocked, []byte("hash-a"), []byte("hash-a")); err != nil || calls.Load() != 1 {
		t.Errorf("a verified secret without new comparisons: %v, %d comparisons; want it accepted from memory", err, calls.Load())
	}
}

func TestSecretCheckerBoundsConcurrentComparisons(t *testing.T) {
	now := time.Now()
	c, _ := countingChecker(&now)
	var running, most atomic.Int32
	release := make(chan struct{})
	c.compare = func(hash, data []byte) error {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		running.Add(-1)
		return errors.New("mismatch")
	}
	slots := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for i := range slots + 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Compare(context.Background(), []byte("hash"), []byte{byte(i)})
		}()
	}
	// A comparison waiting for a slot gives up with its request.
	for running.Load() < int32(slots) {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Compare(ctx, []byte("hash"), []byte("late")); !errors.Is(err, context.Canceled) {
		t.Errorf("a comparison whose request ended: %v, want context.Canceled", err)
	}
	close(release)
	wg.Wait()
	if most.Load() != int32(slots) {
		t.Errorf("at most %d comparisons ran at once, want %d (one per CPU)", most.Load(), slots)
	}
}

func TestClientFailures(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := NewClientFailures(func() time.Time { return now })
	for i := range clientFailureBurst {
		if f.Blocked("client-a", "192.0.2.1") {
			t.Fatalf("blocked after %d failures", i)
		}
		f.Failed("client-a", "192.0.2.1")
	}
	if !f.Blocked("client-a", "192.0.2.1") {
		t.Fatalf("not blocked after %d failures", clientFailureBurst)
	}
	if f.Blocked("client-b", "192.0.2.1") || f.Blocked("client-a", "192.0.2.2") {
		t.Fatal("failures of one client from one source block another client, or the client elsewhere")
	}
	now = now.Add(clientFailureInterval)
	if f.Blocked("client-a", "192.0.2.1") {
		t.Errorf("still blocked %v later", clientFailureInterval)
	}
}
