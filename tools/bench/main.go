// Command bench gates a benchmark run: it reads the run's results (Go benchmark format, any number
// of files), compares every figure with the committed baseline as a ratio, checks the goals, draws
// each curve, and writes report.md and the PNG plots into -out. It exits 1 when a figure regressed
// by more than -tolerance beyond the noise measured in the baseline's own repeated runs, when a
// goal does not hold, or (unless -subset) when a figure of the baseline or a goal is missing. A
// goal whose figure was measured otherwise than the goal is about (its where in goals.yaml) is
// reported and named at the end, not judged.
//
// Benchmarks say which way is better with the format's unit metadata ("Unit req/s better=higher");
// a figure whose unit says neither is reported, not gated.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	baseline := flag.String("baseline", "", "the committed baseline (Go benchmark format, repeated runs)")
	goalsFile := flag.String("goals", "", "the goals (YAML)")
	out := flag.String("out", "_output/bench", "where report.md and the plots go")
	tolerance := flag.Float64("tolerance", 0.10, "the regression allowed beyond the baseline's measured noise, as a fraction")
	subset := flag.Bool("subset", false, "the run is a subset (the short form): figures and goals it lacks are not failures")
	flag.Parse()
	if err := run(*baseline, *goalsFile, *out, *tolerance, *subset, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(baselineFile, goalsFile, out string, tolerance float64, subset bool, results []string) error {
	if len(results) == 0 {
		return fmt.Errorf("no results to read")
	}
	current, err := readFiles(results...)
	if err != nil {
		return err
	}
	var baseline *figures
	if baselineFile != "" {
		if baseline, err = readFiles(baselineFile); err != nil {
			return err
		}
		if err := baseline.repeated(); err != nil {
			return err
		}
	}
	var goals []goal
	if goalsFile != "" {
		if goals, err = readGoals(goalsFile); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	g := gateOf(current, baseline, tolerance, subset)
	r := report{
		current:     current,
		comparisons: compare(current, baseline, g),
		gate:        g,
		goals:       checkGoals(current, goals, subset),
		curves:      curvesOf(current),
		baseline:    baselineFile,
	}
	for i := range r.curves {
		if err := r.curves[i].plot(out); err != nil {
			return err
		}
	}
	text := r.markdown()
	if err := os.WriteFile(filepath.Join(out, "report.md"), []byte(text), 0o644); err != nil {
		return err
	}
	fmt.Print(text)
	for _, g := range r.goals {
		if g.verdict == notJudged {
			fmt.Printf("bench: the goal of %s (%s %s) was not judged: %s\n", g.Name, g.bound(), g.Unit, g.elsewhere)
		}
	}
	if failures := r.failures(); failures > 0 {
		return fmt.Errorf("%d figures regressed, missing or short of their goals (see %s)", failures, filepath.Join(out, "report.md"))
	}
	return nil
}
