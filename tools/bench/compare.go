package main

import (
	"fmt"
	"slices"
	"strings"
)

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
	notJudged verdict = "not judged" // a goal measured elsewhere than its Where
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
// request), requests and allocations per operation, memory, refusals. A subset run (the short
// form, on whatever machine CI has) gates only these, and reports rates and latencies; so does a
// full run on a machine slower than the baseline's (machineSpeed).
var machineIndependent = map[string]bool{
	"ratio": true, "requests/call": true, "MiB": true, "rejected": true, "B/op": true, "allocs/op": true,
}

// speedReference names the figures that say how fast the machine ran: the kube-apiserver's own
// no-op request (a SelfSubjectReview) at each step of clients, which the Concierge's load test
// measures in every run, short or full, as the reference of its ratios. The kube-apiserver is the
// same release in the baseline and the run (KUBE_VERSION) and serves the same request, so what
// moves its rate is the machine, not this project's code.
const speedReference = "KubeAPI/request=SelfSubjectReview/"

// machineSpeed is how fast this run's machine was against the baseline's.
type machineSpeed struct {
	ratio float64 // the median over the references of this run's rate over the baseline's; 0: unknown
	noise float64 // the median of the references' spreads in the baseline
}

func speedOf(current, baseline *figures) machineSpeed {
	if baseline == nil {
		return machineSpeed{}
	}
	var ratios, noises []float64
	for _, k := range current.order {
		base, ok := baseline.values[k]
		if !ok || k.unit != "req/s" || !strings.HasPrefix(k.name, speedReference) || median(base) <= 0 {
			continue
		}
		ratios = append(ratios, median(current.values[k])/median(base))
		noises = append(noises, spread(base))
	}
	if len(ratios) == 0 {
		return machineSpeed{}
	}
	return machineSpeed{ratio: median(ratios), noise: median(noises)}
}

// slower says whether the machine ran slower than the baseline's by more than tolerance and the
// references' own noise: the same build on this kind of machine (a VM whose host is shared) was
// measured 40% apart in rate on two days. Then what depends on the machine's speed (rates,
// latencies, CPU times) cannot be compared with the baseline and is reported only.
func (s machineSpeed) slower(tolerance float64) bool {
	return s.ratio > 0 && s.ratio < 1-tolerance-s.noise
}

// oneClient says whether a figure is of a step of one client. Its ratio is then of two latencies,
// each path's calls made one after the other, and paths of different lengths (a login's Secret
// writes through the kube-apiserver to etcd against the kube-apiserver's no-op) slow differently
// when the host is busy. On three days this machine ran at 0.67 to 0.73 of the baseline's speed,
// the password login over the no-op came out at 0.74, 0.76 and 1.14 of the baseline's ratio at
// one client, and at 0.96 to 1.00 at 8 and 32; on two of them the exchange through the
// aggregation layer over the anonymous WhoAmI came out at 0.81 to 0.91 at one client, and at
// 1.06 to 1.14 at 16 and 64 on the second. So on a slower machine such a ratio is reported, as
// the rates are.
func oneClient(name string) bool { return slices.Contains(strings.Split(name, "/"), "clients=1") }

// gate is how a run is set against the baseline.
type gate struct {
	tolerance float64      // how much worse than the baseline's median a figure may be, beyond its noise
	subset    bool         // the short form: figures it lacks are not missing
	speed     machineSpeed // how fast this run's machine was
}

func gateOf(current, baseline *figures, tolerance float64, subset bool) gate {
	return gate{tolerance: tolerance, subset: subset, speed: speedOf(current, baseline)}
}

// speedGated says whether figures that depend on the machine's speed are gated: only in a full run
// on a machine as fast as the baseline's.
func (g gate) speedGated() bool { return !g.subset && !g.speed.slower(g.tolerance) }

// countedToZero are the units whose zero is exact, a count that should stay at none: a figure at
// zero in such a unit is still gated. Elsewhere a zero is a measurement's floor (a server's CPU
// per call, in /proc's 10 ms ticks, on a path that does not reach it), and is reported only.
var countedToZero = map[string]bool{"requests/call": true, "rejected": true}

// compare sets each figure of current against baseline. A figure is worse when it moved in its
// unit's worse direction by more than the gate's tolerance plus the baseline's own noise; the
// noise is measured, so a figure that swings 8% between identical runs is allowed 18%, not 10%.
// Figures that depend on the machine's speed are gated only as g.speedGated says.
func compare(current, baseline *figures, g gate) []comparison {
	if baseline == nil {
		return nil
	}
	tolerance := g.tolerance
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
		case !g.speedGated() && !machineIndependent[k.unit]:
			c.verdict = speedOnly
		case g.speed.slower(g.tolerance) && oneClient(k.name):
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
	if !g.subset {
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
