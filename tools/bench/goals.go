package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// goal is a bound a figure must keep, with the reason for it.
type goal struct {
	// Name and Unit name the figure.
	Name string `json:"name"`
	Unit string `json:"unit"`
	// Min and Max bound its median; either may be absent.
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// Why is what the bound stands for, in the report.
	Why string `json:"why"`
	// Where is the run's configuration (its "key: value" lines) in which the figure measures what
	// the bound is about. A run measured otherwise reports the figure beside the bound but does
	// not judge it: a goal about a proxy on CPUs of its own cannot be met or missed by a proxy
	// sharing the node's.
	Where map[string]string `json:"where,omitempty"`
}

func readGoals(name string) ([]goal, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var goals []goal
	if err := yaml.UnmarshalStrict(data, &goals); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i, g := range goals {
		if g.Name == "" || g.Unit == "" || (g.Min == nil && g.Max == nil) {
			return nil, fmt.Errorf("%s: goal %d needs a name, a unit and a min or a max", name, i+1)
		}
	}
	return goals, nil
}

// goalResult is a goal checked against a run.
type goalResult struct {
	goal
	value   float64
	verdict verdict
	// elsewhere says how the run differs from the goal's Where, when it was not judged.
	elsewhere string
}

// verdictText is the verdict with the reason a goal was not judged.
func (r goalResult) verdictText() string {
	if r.verdict == notJudged {
		return fmt.Sprintf("%s (%s)", r.verdict, r.elsewhere)
	}
	return string(r.verdict)
}

func (g goal) bound() string {
	switch {
	case g.Min != nil && g.Max != nil:
		return fmt.Sprintf("%g to %g", *g.Min, *g.Max)
	case g.Min != nil:
		return fmt.Sprintf(">= %g", *g.Min)
	default:
		return fmt.Sprintf("<= %g", *g.Max)
	}
}

// measuredElsewhere says how config differs from the goal's Where, or "" when it does not.
func (g goal) measuredElsewhere(config map[string]string) string {
	var differs []string
	for _, k := range slices.Sorted(maps.Keys(g.Where)) {
		if got, ok := config[k]; !ok {
			differs = append(differs, fmt.Sprintf("it needs %s: %s, which this run does not record", k, g.Where[k]))
		} else if got != g.Where[k] {
			differs = append(differs, fmt.Sprintf("it needs %s: %s, this run's is %s", k, g.Where[k], got))
		}
	}
	return strings.Join(differs, "; ")
}

func checkGoals(current *figures, goals []goal, subset bool) []goalResult {
	var out []goalResult
	for _, g := range goals {
		r := goalResult{goal: g}
		values, ok := current.values[key{g.Name, g.Unit}]
		switch {
		case !ok && subset:
			continue
		case !ok:
			r.verdict = missing
		default:
			r.value = median(values)
			r.verdict = pass
			if r.elsewhere = g.measuredElsewhere(current.config); r.elsewhere != "" {
				r.verdict = notJudged
			} else if (g.Min != nil && r.value < *g.Min) || (g.Max != nil && r.value > *g.Max) {
				r.verdict = failed
			}
		}
		out = append(out, r)
	}
	return out
}
