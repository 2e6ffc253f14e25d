// Package baseline compares a matrix run with an earlier one, read from that run's JSON report:
// a cell that passed (or was flaky) then and fails or errs now is a regression; one that failed,
// erred or had no cell then and passes now is fixed, or a new pass. Every other move (a version
// this machine cannot run, a cell the budget left out) is no change, so that what CI acts on is
// what the code did.
package baseline

import (
	"encoding/json"
	"fmt"
	"os"

	"sealion.dev/matrix"
)

// Load reads a JSON report (report.JSON's output). Fields added since it was written are zero;
// a file that is not a report is an error naming it.
func Load(path string) (matrix.Results, error) {
	var r matrix.Results
	data, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("baseline: %w", err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("baseline %s is not a matrix JSON report: %w", path, err)
	}
	if r.Groups == nil {
		return r, fmt.Errorf("baseline %s is not a matrix JSON report: it has no groups", path)
	}
	return r, nil
}

// Mark sets each cell's Change against the baseline old, read from the file named name, and
// records name in r.Baseline. Cells are matched by distribution, Kubernetes minor and identity
// path, so a newer patch release of the same minor is the same cell.
func Mark(r *matrix.Results, old matrix.Results, name string) {
	before := map[string]matrix.Status{}
	for _, g := range old.Groups {
		for _, p := range g.Paths {
			before[key(g, p)] = p.Status
		}
	}
	r.Baseline = name
	for gi := range r.Groups {
		g := &r.Groups[gi]
		for pi := range g.Paths {
			p := &g.Paths[pi]
			was, known := before[key(*g, *p)]
			p.Change = change(was, known, p.Status)
		}
	}
}

func change(was matrix.Status, known bool, now matrix.Status) matrix.Change {
	switch {
	case now.Failed() && (was == matrix.Pass || was == matrix.Flaky):
		return matrix.Regression
	case now == matrix.Pass && !known:
		return matrix.NewPass
	case now == matrix.Pass && was.Failed():
		return matrix.Fixed
	}
	return ""
}

func key(g matrix.GroupResult, p matrix.PathResult) string {
	return g.Distribution + "/" + g.Version.Minor + "/" + p.Name
}
