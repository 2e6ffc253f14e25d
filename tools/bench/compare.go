package main

import "fmt"

// verdict is what a comparison or a goal concludes.
type verdict string

const (
	pass      verdict = "ok"
	regressed verdict = "REGRESSED"
	missing   verdict = "MISSING"
	improved  verdict = "improved"
	ungated   verdict = "not gated"
	speedOnly verdict = "not gated (machine's speed)"
	unknown   verdict = "new"
	failed    verdict = "FAILED"
)

func (v verdict) fails() bool { return v == regressed || v == missing || v == failed }

// comparison is one figure against the baseline.
type comparison struct {
	key
	current, baseline float64 // medians
	ratio             float64 // current / baseline
	noise             float64 // the baseline's spread across its repeated runs
	verdict           verdict
}

// machineIndependent are the units whose figures do not depend on how fast the machine is: ratios
// to a reference measured in the same run (a server's rate over the kube-apiserver's own no-op
// request), requests and allocations per operation, memory, refusals. The same build on the same
// kind of machine was measured 40% apart in rate on two days, so a subset run (the short form,
// on whatever machine CI has) gates only these, and reports rates and latencies.
var machineIndependent = map[string]bool{
	"ratio": true, "requests/call": true, "MiB": true, "rejected": true, "B/op": true, "allocs/op": true,
}

// countedToZero are the units whose zero is exact, a count that should stay at none: a figure at
// zero in such a unit is still gated. Elsewhere a zero is a measurement's floor (a server's CPU
// per call, in /proc's 10 ms ticks, on a path that does not reach it), and is reported only.
var countedToZero = map[string]bool{"requests/call": true, "rejected": true}

// compare sets each figure of current against baseline. A figure is worse when it moved in its
// unit's worse direction by more than tolerance plus the baseline's own noise; the noise is
// measured, so a figure that swings 8% between identical runs is allowed 18%, not 10%.
func compare(current, baseline *figures, tolerance float64, subset bool) []comparison {
	if baseline == nil {
		return nil
	}
	var out []comparison
	for _, k := range current.order {
		c := comparison{key: k, current: median(current.values[k])}
		base, ok := baseline.values[k]
		if !ok {
			c.verdict = unknown
			out = append(out, c)
			continue
		}
		c.baseline, c.noise = median(base), spread(base)
		if c.baseline != 0 {
			c.ratio = c.current / c.baseline
		}
		better := current.better(k.unit)
		if better == 0 {
			better = baseline.better(k.unit)
		}
		limit := tolerance + c.noise
		switch {
		case better == 0:
			c.verdict = ungated
		case c.baseline == 0 && better < 0 && countedToZero[k.unit]:
			// Nothing to take a ratio of, yet a figure that should stay at zero (kube requests
			// of a cached read, refusals) must not creep up: tolerance is then in its own unit.
			if c.current > tolerance {
				c.verdict = regressed
			} else {
				c.verdict = pass
			}
		case c.baseline <= 0:
			// No ratio of zero, or of a difference that came out below zero (the latency one
			// path adds over another, where both are within their noise), means anything.
			c.verdict = ungated
		case subset && !machineIndependent[k.unit]:
			c.verdict = speedOnly
		case float64(better)*(c.ratio-1) < -limit:
			c.verdict = regressed
		case float64(better)*(c.ratio-1) > limit:
			c.verdict = improved
		default:
			c.verdict = pass
		}
		out = append(out, c)
	}
	if !subset {
		for _, k := range baseline.order {
			if _, ok := current.values[k]; !ok {
				out = append(out, comparison{key: k, baseline: median(baseline.values[k]), verdict: missing})
			}
		}
	}
	return out
}

func (c comparison) ratioString() string {
	if c.verdict == missing || c.verdict == unknown || c.baseline == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", c.ratio)
}
