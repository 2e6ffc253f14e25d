package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchunit"
)

// report is what a run concluded, written as Markdown.
type report struct {
	current     *figures
	comparisons []comparison
	gate        gate
	goals       []goalResult
	curves      []curve
	baseline    string
}

func (r report) failures() int {
	n := 0
	for _, c := range r.comparisons {
		if c.verdict.fails() {
			n++
		}
	}
	for _, g := range r.goals {
		if g.verdict.fails() {
			n++
		}
	}
	return n
}

// value formats v of unit for the report: times as durations, everything else scaled (1.546k).
func value(v float64, unit string) string {
	if tidied, tidyUnit := benchunit.Tidy(v, unit); strings.HasPrefix(tidyUnit, "sec") {
		return time.Duration(tidied * float64(time.Second)).Round(time.Microsecond).String()
	}
	return benchunit.Scale(v, benchunit.ClassOf(unit))
}

func (r report) markdown() string {
	var b strings.Builder
	fmt.Fprintln(&b, "# Benchmarks")
	fmt.Fprintln(&b)
	for _, k := range r.current.keys {
		fmt.Fprintf(&b, "- %s: %s\n", k, r.current.config[k])
	}
	if r.baseline != "" {
		fmt.Fprintf(&b, "\n## Against the baseline (%s)\n\n", r.baseline)
		fmt.Fprintf(&b, "A figure regresses when it is worse than the baseline's median by more than %.0f%% plus the baseline's own\n", 100*r.gate.tolerance)
		fmt.Fprintln(&b, "run-to-run noise (the range of its repeated runs).")
		fmt.Fprintln(&b)
		if speed := r.gate.speed; speed.ratio > 0 {
			fmt.Fprintf(&b, "This machine's speed: the kube-apiserver's own no-op request (%s) ran at %.2f of the\n", strings.TrimSuffix(speedReference, "/"), speed.ratio)
			fmt.Fprintf(&b, "baseline's rate (the median over its steps; the baseline's noise %.0f%%).", 100*speed.noise)
			switch {
			case r.gate.speedGated():
				fmt.Fprintln(&b, " Every figure is gated.")
			case r.gate.subset:
				fmt.Fprintln(&b, " A short run gates what does not depend on the machine's speed.")
			default:
				fmt.Fprintln(&b, " The machine ran slower than the baseline's, so rates,\nlatencies, CPU times and ratios at one client are reported, not gated; other ratios, counts and memory are.\nMeasure again on a quiet machine to gate them.")
			}
			fmt.Fprintln(&b)
		}
		fmt.Fprintln(&b, "| Benchmark | Unit | Baseline | This run | Ratio | Noise | Verdict |")
		fmt.Fprintln(&b, "|---|---|---:|---:|---:|---:|---|")
		for _, c := range r.comparisons {
			cur, base := "-", "-"
			if c.verdict != missing {
				cur = value(c.current, c.unit)
			}
			if c.verdict != unknown {
				base = value(c.baseline, c.unit)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.0f%% | %s |\n", c.name, c.unit, base, cur, c.ratioString(), 100*c.noise, c.verdict)
		}
	}
	if len(r.goals) > 0 {
		fmt.Fprintln(&b, "\n## Goals")
		fmt.Fprintln(&b)
		fmt.Fprintln(&b, "| Benchmark | Unit | Goal | This run | Verdict | Why |")
		fmt.Fprintln(&b, "|---|---|---|---:|---|---|")
		for _, g := range r.goals {
			v := "-"
			if g.verdict != missing {
				v = value(g.value, g.Unit)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", g.Name, g.Unit, g.bound(), v, g.verdictText(), g.Why)
		}
	}
	if len(r.curves) > 0 {
		fmt.Fprintln(&b, "\n## Curves")
		for _, c := range r.curves {
			fmt.Fprintf(&b, "\n### %s: %s by %s\n\n", c.title, c.unit, c.x)
			if c.file != "" {
				fmt.Fprintf(&b, "![%s](%s)\n\n", c.title, c.file)
			}
			fmt.Fprintf(&b, "| %s |", c.x)
			for _, s := range c.series {
				fmt.Fprintf(&b, " %s |", cmpLabel(s.label, c.unit))
			}
			fmt.Fprintf(&b, "\n|---:|%s\n", strings.Repeat("---:|", len(c.series)))
			for _, x := range c.xs() {
				fmt.Fprintf(&b, "| %g |", x)
				for _, s := range c.series {
					cell := "-"
					for _, p := range s.points {
						if p.x == x {
							cell = value(p.y, c.unit)
						}
					}
					fmt.Fprintf(&b, " %s |", cell)
				}
				fmt.Fprintln(&b)
			}
		}
	}
	return b.String()
}

func cmpLabel(label, unit string) string {
	if label == "" {
		return unit
	}
	return label
}

// xs are the x values of every series of c, in order.
func (c curve) xs() []float64 {
	var xs []float64
	seen := map[float64]bool{}
	for _, s := range c.series {
		for _, p := range s.points {
			if !seen[p.x] {
				seen[p.x] = true
				xs = append(xs, p.x)
			}
		}
	}
	slices.Sort(xs)
	return xs
}
