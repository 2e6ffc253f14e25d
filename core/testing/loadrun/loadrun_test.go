package loadrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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

func TestWrite(t *testing.T) {
	var b strings.Builder
	WriteUnits(&b)
	Write(&b, "Exchange/clients=32", Result{Rate: 1546.26, P50: 12345 * time.Microsecond, P99: 40 * time.Millisecond}.Figures()...)
	Write(&b, "Proxy/ratio", Figure{0.93, Ratio})
	want := `Unit MB/s better=higher
Unit MiB better=lower
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

// CPUOf finds this test binary by its name and sees the CPU it burns.
func TestCPUOf(t *testing.T) {
	self := filepath.Base(os.Args[0])
	before, err := CPUOf(self, "no-such-server")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before["no-such-server"]; ok {
		t.Error("a CPU time for a process that does not run")
	}
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
	}
	after, err := CPUOf(self)
	if err != nil {
		t.Fatal(err)
	}
	// 200 ms of wall time on one goroutine is at least 100 ms of CPU even on a busy machine.
	if burnt := after[self] - before[self]; burnt < 100*time.Millisecond {
		t.Errorf("%v of CPU measured for a 200 ms busy loop", burnt)
	}
}
