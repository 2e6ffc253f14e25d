package loadrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestClosed(t *testing.T) {
	var calls atomic.Int64
	r := Closed(4, 200*time.Millisecond, func(ctx context.Context, client int) error {
		if client < 0 || client > 3 {
			t.Errorf("client %d of 4", client)
		}
		time.Sleep(time.Millisecond)
		if calls.Add(1)%10 == 0 {
			return errors.New("every tenth call fails")
		}
		return nil
	})
	if r.Count == 0 || len(r.Failures) == 0 || int64(r.Count+len(r.Failures)) > calls.Load() {
		t.Errorf("%d succeeded and %d failed of %d calls", r.Count, len(r.Failures), calls.Load())
	}
	if r.P50 < time.Millisecond || r.P99 < r.P50 || r.Rate <= 0 {
		t.Errorf("p50 %v, p99 %v, rate %v", r.P50, r.P99, r.Rate)
	}
}

// TestInterleaved: the ops take turns, a round at a time, each turn run by the function around
// it, and each op's result counts its own calls over all the rounds.
func TestInterleaved(t *testing.T) {
	const rounds = 3 // of 100 ms in 300
	var mu sync.Mutex
	var turns []int // which op each call was of, in order
	var calls [2]int
	op := func(i int) func(context.Context, int) error {
		return func(context.Context, int) error {
			time.Sleep(time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			if len(turns) == 0 || turns[len(turns)-1] != i {
				turns = append(turns, i)
			}
			calls[i]++
			return nil
		}
	}
	var around []int // which op each turn was of, as InterleavedAround saw them
	results := InterleavedAround(2, 300*time.Millisecond, 100*time.Millisecond, func(i int, turn func()) {
		around = append(around, i)
		turn()
	}, op(0), op(1))
	if want := []int{0, 1, 0, 1, 0, 1}; !slices.Equal(turns, want) || !slices.Equal(around, want) {
		t.Errorf("the ops ran in turns %v, seen around as %v, want %v", turns, around, want)
	}
	for i, r := range results {
		// A call under way when its round ends is not counted.
		if r.Count == 0 || r.Count > calls[i] || calls[i]-r.Count > 2*rounds || r.Rate <= 0 {
			t.Errorf("op %d: %d counted of %d calls, rate %v", i, r.Count, calls[i], r.Rate)
		}
	}
}

func TestWrite(t *testing.T) {
	var b strings.Builder
	WriteUnits(&b)
	Write(&b, "Exchange/clients=32", Result{Rate: 1546.26, P50: 12345 * time.Microsecond, P99: 40 * time.Millisecond}.Figures()...)
	Write(&b, "Proxy/ratio", Figure{0.93, Ratio})
	want := `Unit MB/s better=higher
Unit MiB better=lower
Unit cpu-us/MB better=lower
Unit cpu-us/call better=lower
Unit events/s better=higher
Unit max-gap-ms better=lower
Unit ms/call better=lower
Unit p50-ms better=lower
Unit p99-ms better=lower
Unit ratio better=higher
Unit rejected better=lower
Unit req/s better=higher
Unit requests/call better=lower
Unit s better=lower
BenchmarkExchange/clients=32 1 1546 req/s 12.35 p50-ms 40 p99-ms
BenchmarkProxy/ratio 1 0.93 ratio
`
	if b.String() != want {
		t.Errorf("wrote\n%s\nwant\n%s", b.String(), want)
	}
}

func TestMemoryOf(t *testing.T) {
	m, err := MemoryOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.Peak < m.RSS {
		t.Errorf("RSS %.1f MiB, peak %.1f MiB", m.RSS, m.Peak)
	}
	if _, err := MemoryOf(-1); err == nil {
		t.Error("MemoryOf(-1) succeeded")
	}
}

// CPUOf finds this test binary by its name and sees the CPU it burns, as the kernel accounts it
// to the process (getrusage): a busy loop runs until that has grown by 200 ms, however busy the
// machine, and CPUOf must see the same within the 10 ms ticks of /proc.
func TestCPUOf(t *testing.T) {
	self := filepath.Base(os.Args[0])
	before, err := CPUOf(self, "no-such-server")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before["no-such-server"]; ok {
		t.Error("a CPU time for a process that does not run")
	}
	start := rusageCPU(t)
	for rusageCPU(t)-start < 200*time.Millisecond {
	}
	burnt := rusageCPU(t) - start
	after, err := CPUOf(self)
	if err != nil {
		t.Fatal(err)
	}
	// The two reads of /proc bracket the loop; other goroutines of the test binary (the
	// runtime's) may add a little.
	if got := after[self] - before[self]; got < burnt-30*time.Millisecond || got > burnt+100*time.Millisecond {
		t.Errorf("CPUOf saw %v of CPU for a loop the kernel accounts %v to", got, burnt)
	}
}

// rusageCPU is this process's user and system CPU time so far.
func rusageCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestCPUBusy(t *testing.T) {
	before, err := CPUBusy()
	if err != nil {
		t.Fatal(err)
	}
	// NumCPU counts the CPUs this process may use, which may be fewer than the machine's.
	if len(before) < runtime.NumCPU() {
		t.Errorf("CPUBusy names %d CPUs, this process may use %d", len(before), runtime.NumCPU())
	}
	start := rusageCPU(t)
	for rusageCPU(t)-start < 200*time.Millisecond {
	}
	burnt := rusageCPU(t) - start
	after, err := CPUBusy()
	if err != nil {
		t.Fatal(err)
	}
	// The loop kept one CPU or another busy all along; other processes may add to it.
	var busy time.Duration
	for cpu, b := range after {
		busy += b - before[cpu]
	}
	if busy < burnt-30*time.Millisecond {
		t.Errorf("CPUBusy saw %v busy over a loop the kernel accounts %v to", busy, burnt)
	}
}
