package main

import (
	"fmt"
	"slices"
	"sort"

	"golang.org/x/perf/benchfmt"
)

// key names one figure: a benchmark (as the format's reader names it, without "Benchmark", with its
// sub-benchmark parts, without GOMAXPROCS) and a unit.
type key struct{ name, unit string }

func (k key) String() string { return k.name + " " + k.unit }

// figures are a run's results: every value of each figure (one per repeated run), the units'
// metadata, and the configuration the run recorded (machine, versions, commit).
type figures struct {
	values map[key][]float64
	order  []key
	units  benchfmt.UnitMetadataMap
	config map[string]string
	keys   []string // config keys, in the order first seen
}

func readFiles(names ...string) (*figures, error) {
	f := &figures{values: map[key][]float64{}, units: benchfmt.UnitMetadataMap{}, config: map[string]string{}}
	files := benchfmt.Files{Paths: names}
	for files.Scan() {
		switch rec := files.Result().(type) {
		case *benchfmt.Result:
			for _, c := range rec.Config {
				if _, seen := f.config[c.Key]; !seen && c.File {
					f.config[c.Key] = string(c.Value)
					f.keys = append(f.keys, c.Key)
				}
			}
			name := nameWithoutProcs(rec.Name)
			for _, v := range rec.Values {
				// The units as the benchmark wrote them: the reader tidies MB/s into B/s.
				if v.OrigUnit != "" {
					v.Value, v.Unit = v.OrigValue, v.OrigUnit
				}
				k := key{name, v.Unit}
				if _, seen := f.values[k]; !seen {
					f.order = append(f.order, k)
				}
				f.values[k] = append(f.values[k], v.Value)
			}
		case *benchfmt.UnitMetadata:
			f.units[rec.UnitMetadataKey] = rec
		case *benchfmt.SyntaxError:
			return nil, rec
		}
	}
	if err := files.Err(); err != nil {
		return nil, err
	}
	if len(f.values) == 0 {
		return nil, fmt.Errorf("no benchmark results in %v", names)
	}
	return f, nil
}

// nameWithoutProcs drops the -N suffix of GOMAXPROCS, which says nothing about the figure: the
// servers under load are other processes.
func nameWithoutProcs(n benchfmt.Name) string {
	base, parts := n.Parts()
	name := string(base)
	for _, p := range parts {
		if len(p) > 0 && p[0] == '-' {
			continue
		}
		name += string(p)
	}
	return name
}

// repeated checks that each figure of a baseline was measured in two runs or more: from one run
// its noise reads as zero, and the gate would fail on a run's ordinary jitter.
func (f *figures) repeated() error {
	for _, k := range f.order {
		if n := len(f.values[k]); n < 2 {
			return fmt.Errorf("the baseline has %d run of %s: measure it with make bench-baseline (BENCH_RUNS of 2 or more)", n, k)
		}
	}
	return nil
}

// better is +1 when a higher value of unit is better, -1 when lower, 0 when unknown.
func (f *figures) better(unit string) int {
	return f.units.GetBetter(unit)
}

func median(values []float64) float64 {
	v := slices.Clone(values)
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// spread is the noise of repeated runs: the range of values as a fraction of their median (0 for
// a single run).
func spread(values []float64) float64 {
	m := median(values)
	if len(values) < 2 || m == 0 {
		return 0
	}
	return (slices.Max(values) - slices.Min(values)) / m
}
