// Package loadrun drives the load tests of make bench: a number of clients call an operation as
// fast as they can for a while, and the outcome is its rate and latency percentiles. Figures are
// written in the Go benchmark format, with the direction of each unit, for tools/bench to compare
// with the baseline, check against the goals and draw as curves.
package loadrun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Result is one step of a load test.
type Result struct {
	// Count is how many calls succeeded; Failures are the errors of the others.
	Count    int
	Failures []error
	// P50 and P99 are the successful calls' latencies; Rate is Count per second of the step.
	P50, P99 time.Duration
	Rate     float64
}

// Closed runs op from clients concurrent callers, each calling again as soon as its call
// returns, for d (a closed loop: the load adapts to the server's speed). A call that is still
// running when d ends is not counted.
func Closed(clients int, d time.Duration, op func(ctx context.Context, client int) error) Result {
	var s samples
	s.add(clients, d, op)
	return s.result()
}

// Interleaved runs each of ops as Closed does for d in all, in rounds of about round (one at
// least): every round runs each op in turn for its share of d. Their rates are then measured
// over the same stretch of time, so a ratio of two of them does not move with the machine's
// speed. On a shared host that speed drifts over seconds: with each op run for d after the
// other, an exchange's rate over a no-op's measured 0.64 and 0.93 for the same build on one
// day. A round should last many times an op's call, since the calls under way when it ends are
// not counted.
func Interleaved(clients int, d, round time.Duration, ops ...func(ctx context.Context, client int) error) []Result {
	return InterleavedAround(clients, d, round, func(_ int, turn func()) { turn() }, ops...)
}

// InterleavedAround is Interleaved with around run about each turn (op i's share of a round,
// which it runs by calling turn), to measure what the turns cost beyond their calls' latency: a
// process's CPU time, say. What around does outside turn is not counted in the op's time.
func InterleavedAround(clients int, d, round time.Duration, around func(op int, turn func()), ops ...func(ctx context.Context, client int) error) []Result {
	rounds := max(1, int(d/round))
	all := make([]samples, len(ops))
	for range rounds {
		for i, op := range ops {
			around(i, func() { all[i].add(clients, d/time.Duration(rounds), op) })
		}
	}
	out := make([]Result, len(ops))
	for i := range all {
		out[i] = all[i].result()
	}
	return out
}

// Check fails t if a call of a step of clients failed, saying how the first did, and stops it if
// none completed, with what the server under load logged (logs).
func Check(t testing.TB, what string, clients int, r Result, logs func() string) {
	t.Helper()
	if len(r.Failures) > 0 {
		t.Errorf("%s with %d clients: %d calls failed; the first: %v", what, clients, len(r.Failures), r.Failures[0])
	}
	if r.Count == 0 {
		t.Fatalf("%s with %d clients: no call completed%s", what, clients, logs())
	}
}

// samples are the outcomes of an op's calls over one or more runs of a closed loop.
type samples struct {
	latencies []time.Duration // of the calls that succeeded
	failures  []error
	elapsed   time.Duration
}

// add runs op as Closed describes and adds its outcomes to s.
func (s *samples) add(clients int, d time.Duration, op func(ctx context.Context, client int) error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			var mine []time.Duration
			var bad []error
			for ctx.Err() == nil {
				began := time.Now()
				err := op(ctx, c)
				// The step ended during this call. The deadline is checked too: a call that
				// reads it (a dialer does) fails at once once it has passed, before the
				// context's timer has fired on a busy machine, and would otherwise count as
				// failures, as many as fit in that moment.
				if ctx.Err() != nil || !time.Now().Before(deadline) {
					break
				}
				if err != nil {
					bad = append(bad, err)
					continue
				}
				mine = append(mine, time.Since(began))
			}
			mu.Lock()
			s.latencies, s.failures = append(s.latencies, mine...), append(s.failures, bad...)
			mu.Unlock()
		})
	}
	wg.Wait()
	s.elapsed += time.Since(start)
}

func (s samples) result() Result {
	r := Result{Count: len(s.latencies), Failures: s.failures, Rate: float64(len(s.latencies)) / s.elapsed.Seconds()}
	if len(s.latencies) > 0 {
		all := slices.Sorted(slices.Values(s.latencies))
		r.P50, r.P99 = all[len(all)/2], all[len(all)*99/100]
	}
	return r
}

// Figure is one value of a benchmark line, in a unit of Units.
type Figure struct {
	Value float64
	Unit  string
}

// The units of the load tests, and which way is better.
const (
	// PerSecond is successful calls per second.
	PerSecond = "req/s"
	// P50Millis and P99Millis are latency percentiles in milliseconds.
	P50Millis = "p50-ms"
	P99Millis = "p99-ms"
	// Ratio is one rate over another of the same run (the proxy's over the direct path's, an
	// exchange's over a no-op's): the figure that does not depend on the machine.
	Ratio = "ratio"
	// MiB is resident memory.
	MiB = "MiB"
	// PerCall is requests (to the kube-apiserver, say) per call.
	PerCall = "requests/call"
	// EventsPerSecond is a watch's events received per second; MaxGapMillis the longest wait
	// between two of them, in milliseconds.
	EventsPerSecond = "events/s"
	MaxGapMillis    = "max-gap-ms"
	// MBPerSecond is a stream's bytes (exec's stdout, a forwarded port's) per second, in 10^6.
	MBPerSecond = "MB/s"
	// Seconds is how long something took; Rejected counts requests a server refused.
	Seconds  = "s"
	Rejected = "rejected"
	// CPUMicrosPerCall is a process's CPU time (user and system) per call, in microseconds;
	// MillisPerCall the time a part of a call took on average, in milliseconds.
	CPUMicrosPerCall = "cpu-us/call"
	MillisPerCall    = "ms/call"
	// CPUMicrosPerMB is a process's CPU time per MB (10^6 bytes) of a stream it carries.
	CPUMicrosPerMB = "cpu-us/MB"
)

// units says which way is better for each unit above.
var units = map[string]string{
	PerSecond: "higher", P50Millis: "lower", P99Millis: "lower", Ratio: "higher", MiB: "lower", PerCall: "lower",
	Seconds: "lower", Rejected: "lower", EventsPerSecond: "higher", MaxGapMillis: "lower", MBPerSecond: "higher",
	CPUMicrosPerCall: "lower", MillisPerCall: "lower", CPUMicrosPerMB: "lower",
}

// WriteUnits writes the unit metadata lines.
func WriteUnits(w io.Writer) {
	for _, u := range slices.Sorted(maps.Keys(units)) {
		fmt.Fprintf(w, "Unit %s better=%s\n", u, units[u])
	}
}

// Figures are r's rate and percentiles.
func (r Result) Figures() []Figure {
	return []Figure{
		{r.Rate, PerSecond},
		{float64(r.P50.Microseconds()) / 1000, P50Millis},
		{float64(r.P99.Microseconds()) / 1000, P99Millis},
	}
}

// Write writes one benchmark line: name (without "Benchmark"; sub-benchmark parts as key=value,
// the last numeric one the x of a curve) and its figures.
func Write(w io.Writer, name string, figures ...Figure) {
	var b strings.Builder
	fmt.Fprintf(&b, "Benchmark%s 1", name)
	for _, f := range figures {
		fmt.Fprintf(&b, " %.4g %s", f.Value, f.Unit)
	}
	fmt.Fprintln(w, b.String())
}

// Memory is a process's resident memory, in MiB: now (VmRSS) and its high-water mark (VmHWM).
type Memory struct{ RSS, Peak float64 }

// MemoryOf reads the memory of the process pid from /proc.
func MemoryOf(pid int) (Memory, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	for _, line := range strings.Split(string(status), "\n") {
		field, value, _ := strings.Cut(line, ":")
		kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 64)
		switch {
		case err != nil:
		case field == "VmRSS":
			m.RSS = kib / 1024
		case field == "VmHWM":
			m.Peak = kib / 1024
		}
	}
	if m.RSS == 0 || m.Peak == 0 {
		return Memory{}, fmt.Errorf("no VmRSS or VmHWM in /proc/%d/status", pid)
	}
	return m, nil
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux this runs on.
const clockTicks = 100

// CPUOf sums the CPU time (user and system) of the processes on this host whose executable's
// base name (argv[0]) is one of names, per name: the servers of a cluster whose nodes run here.
func CPUOf(names ...string) (map[string]time.Duration, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	cpu := map[string]time.Duration{}
	for _, dir := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue // gone
		}
		name := filepath.Base(strings.SplitN(string(cmdline), "\x00", 2)[0])
		if !slices.Contains(names, name) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis start at the state (field 3);
		// utime and stime are fields 14 and 15.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 13 {
			return nil, fmt.Errorf("%s/stat: too few fields", dir)
		}
		for _, f := range fields[11:13] {
			ticks, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s/stat: %w", dir, err)
			}
			cpu[name] += time.Duration(ticks) * time.Second / clockTicks
		}
	}
	return cpu, nil
}

// CPUBusy returns the time each of this machine's CPUs has spent busy since boot (every state of
// /proc/stat but idle and iowait), by CPU number: over a step, the difference says whether a set
// of CPUs was saturated, which is what limits a figure measured on them.
func CPUBusy() (map[int]time.Duration, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, err
	}
	busy := map[int]time.Duration{}
	for line := range strings.Lines(string(stat)) {
		fields := strings.Fields(line)
		// "cpuN user nice system idle iowait irq softirq steal ...": the machine's total line
		// ("cpu") and the other lines are not per CPU.
		if len(fields) < 9 || !strings.HasPrefix(fields[0], "cpu") || fields[0] == "cpu" {
			continue
		}
		cpu, err := strconv.Atoi(strings.TrimPrefix(fields[0], "cpu"))
		if err != nil {
			return nil, fmt.Errorf("/proc/stat: %q: %w", fields[0], err)
		}
		var ticks int64
		for i, f := range fields[1:9] {
			if i == 3 || i == 4 { // idle, iowait
				continue
			}
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/stat: %s: %w", fields[0], err)
			}
			ticks += n
		}
		busy[cpu] = time.Duration(ticks) * time.Second / clockTicks
	}
	if len(busy) == 0 {
		return nil, fmt.Errorf("/proc/stat names no CPU")
	}
	return busy, nil
}
