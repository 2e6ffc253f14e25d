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

func TestSecretCheckerRemembersSuccessesBriefly(t *testing.T) {
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
	now = now.Add(verifiedFor)
	if err := c.Compare(ctx, []byte("hash-a"), []byte("hash-a")); err != nil || calls.Load() != 6 {
		t.Errorf("after %v: %v, %d comparisons; want the secret compared again", verifiedFor, err, calls.Load())
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
		if f.Blocked("client-a") {
			t.Fatalf("blocked after %d failures", i)
		}
		f.Failed("client-a")
	}
	if !f.Blocked("client-a") || f.Blocked("client-b") {
		t.Fatalf("after %d failures: client-a blocked %v, client-b blocked %v; want only client-a", clientFailureBurst, f.Blocked("client-a"), f.Blocked("client-b"))
	}
	now = now.Add(clientFailureInterval)
	if f.Blocked("client-a") {
		t.Errorf("still blocked %v later", clientFailureInterval)
	}
}
