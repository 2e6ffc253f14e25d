package matrix

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"sealion.dev/matrix/kubeversions"
	"sealion.dev/matrix/testjson"
)

// Status is a cell's verdict.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	// Error means the cell could not be tested: an artifact did not build, or the cluster or the
	// suite's setup failed before the tests.
	Error Status = "error"
	// Skip means the suite ran and skipped the path's tests, saying why.
	Skip Status = "skip"
	// NotBuilt is a known distribution or path whose provider or tests do not exist yet.
	NotBuilt Status = "not built yet"
	// CannotRun is a version this machine cannot run (see hostcheck), with the remedy.
	CannotRun Status = "cannot run here"
	// NotRun is a cell left out: the time budget ran out, the run was interrupted, or something
	// the distribution needs is missing.
	NotRun Status = "not run"
)

// Failed reports whether the status fails the matrix run.
func (s Status) Failed() bool { return s == Fail || s == Error }

// severity orders statuses for summaries: the worst wins.
func (s Status) severity() int {
	return slices.Index([]Status{"", NotBuilt, CannotRun, NotRun, Skip, Pass, Error, Fail}, s)
}

// Outcome is a status and the reason for it.
type Outcome struct {
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// TestOutcome is one top-level e2e test.
type TestOutcome struct {
	Package string        `json:"package"`
	Name    string        `json:"name"`
	Status  Status        `json:"status"`
	Reason  string        `json:"reason,omitempty"`
	Elapsed time.Duration `json:"elapsed"`
	// Log is the test's output file, relative to the report folder.
	Log string `json:"log,omitempty"`
}

// PathResult is one cell: an identity path in a group.
type PathResult struct {
	Name string `json:"name"`
	Outcome
	Tests []TestOutcome `json:"tests,omitempty"`
}

// StrategyResult is the group's CredentialIssuer check, the install included.
type StrategyResult struct {
	// Expected is the distribution's expected strategy, empty when not asserted.
	Expected string `json:"expected,omitempty"`
	// Chosen are the strategies the CredentialIssuer reported successful at the end of the run.
	Chosen []string `json:"chosen,omitempty"`
	Outcome
	Tests []TestOutcome `json:"tests,omitempty"`
}

// GroupResult is one distribution x version: its cluster's strategy and its cells.
type GroupResult struct {
	Distribution string               `json:"distribution"`
	Version      kubeversions.Version `json:"version"`
	// Outcome is the worst of the strategy's and the paths', or why the group did not run.
	Outcome
	Strategy *StrategyResult `json:"strategy,omitempty"`
	Paths    []PathResult    `json:"paths"`
	// Dir is the group's log folder and Files every file in it, relative to the report folder.
	Dir      string        `json:"dir,omitempty"`
	Files    []string      `json:"files,omitempty"`
	Started  time.Time     `json:"started,omitzero"`
	Duration time.Duration `json:"duration,omitempty"`
}

// Name is "distribution/version".
func (g GroupResult) Name() string { return g.Distribution + "/" + g.Version.Minor }

// Results are a whole run.
type Results struct {
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	// Budget is the run's time budget, zero for none.
	Budget time.Duration `json:"budget,omitempty"`
	// Host describes the machine (hostcheck) and Commit the checkout.
	Host   string        `json:"host,omitempty"`
	Commit string        `json:"commit,omitempty"`
	Groups []GroupResult `json:"groups"`
	// Shard is set when the run was one shard of a plan (matrix --shard), and Plan then lists every
	// cell of the whole plan, so that matrix merge can check that the shards add up to it.
	Shard *Shard   `json:"shard,omitempty"`
	Plan  []string `json:"plan,omitempty"`
}

// Failed reports whether any cell failed or errored.
func (r Results) Failed() bool {
	return slices.ContainsFunc(r.Groups, func(g GroupResult) bool { return g.Status.Failed() })
}

// Counts tallies cells (identity paths) by status.
func (r Results) Counts() map[Status]int {
	n := map[Status]int{}
	for _, g := range r.Groups {
		for _, p := range g.Paths {
			n[p.Status]++
		}
	}
	return n
}

// Unrun is the result of a group that did not start, for the reason given.
func Unrun(g Group, why Outcome) GroupResult {
	r := GroupResult{Distribution: g.Distribution.Name, Version: g.Version, Outcome: why}
	for _, p := range g.Paths {
		o := why
		if !p.Built() {
			o = Outcome{NotBuilt, "no e2e tests for this identity path yet"}
		}
		r.Paths = append(r.Paths, PathResult{Name: p.Name, Outcome: o})
	}
	return r
}

// Attribute reads a group's `go test -json` report into the verdicts of its strategy and its
// paths. chosen are the strategies the CredentialIssuer reported successful, nil when unknown.
func Attribute(c Catalog, g Group, rep *testjson.Report, chosen []string) GroupResult {
	r := GroupResult{Distribution: g.Distribution.Name, Version: g.Version}
	setupFailed := suiteFailure(rep, c.Package)

	st := &StrategyResult{Expected: g.Distribution.Strategy, Chosen: chosen}
	for _, name := range c.Suite {
		st.Tests = append(st.Tests, testOutcome(rep, c.Package, name, setupFailed))
	}
	st.Outcome = strategyVerdict(c, g.Distribution.Strategy, st)
	if setupFailed != "" {
		st.Outcome = Outcome{Error, setupFailed}
	}
	r.Strategy = st

	for _, p := range g.Paths {
		pr := PathResult{Name: p.Name}
		if !p.Built() {
			pr.Outcome = Outcome{NotBuilt, "no e2e tests for this identity path yet"}
			r.Paths = append(r.Paths, pr)
			continue
		}
		pkg := c.packageOf(p)
		failed := suiteFailure(rep, pkg)
		for _, name := range p.Tests {
			pr.Tests = append(pr.Tests, testOutcome(rep, pkg, name, failed))
		}
		pr.Outcome = pathVerdict(pr.Tests)
		if failed != "" {
			pr.Outcome = Outcome{Error, failed}
		}
		r.Paths = append(r.Paths, pr)
	}

	r.Outcome = st.Outcome
	for _, p := range r.Paths {
		if p.Status.severity() > r.Status.severity() {
			r.Outcome = Outcome{Status: p.Status}
		}
	}
	if r.Status.Failed() && r.Reason == "" {
		r.Reason = "see the failed cells"
	}
	return r
}

// suiteFailure explains why a package ran no test at all (it did not build, or TestMain failed),
// empty when it ran tests or passed.
func suiteFailure(rep *testjson.Report, pkg string) string {
	p := rep.Package(pkg)
	if p == nil {
		msg := "the suite did not run"
		if orphan := rep.Package(""); orphan != nil && len(orphan.Output) > 0 {
			msg += ": " + lastLines(orphan.Output, 5)
		}
		return msg
	}
	if p.BuildFailed {
		return "the suite did not build: " + lastLines(append(p.Output, outputOf(rep.Package(""))...), 10)
	}
	if p.Result == testjson.Fail && len(p.Tests) == 0 {
		return "the suite's setup failed: " + setupError(p.Output)
	}
	return ""
}

func outputOf(p *testjson.Package) []string {
	if p == nil {
		return nil
	}
	return p.Output
}

// setupError picks e2e-framework's "<role> failure: ..." line, else the last lines.
func setupError(lines []string) string {
	for _, l := range lines {
		if i := strings.Index(strings.ToLower(l), "setup failure: "); i >= 0 {
			return strings.TrimSpace(l[i:])
		}
	}
	return lastLines(lines, 5)
}

func lastLines(lines []string, n int) string {
	var kept []string
	for _, l := range lines {
		if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "FAIL") {
			kept = append(kept, s)
		}
	}
	if len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	return strings.Join(kept, "\n")
}

func testOutcome(rep *testjson.Report, pkg, name, suiteFailed string) TestOutcome {
	o := TestOutcome{Package: pkg, Name: name}
	t := rep.Test(pkg, name)
	switch {
	case t == nil && suiteFailed != "":
		o.Status, o.Reason = Error, suiteFailed
	case t == nil:
		o.Status, o.Reason = Error, fmt.Sprintf("%s did not run: %s has no such test (renamed?)", name, pkg)
	default:
		res, reason := t.Outcome()
		o.Elapsed, o.Reason = t.Elapsed, reason
		switch res {
		case testjson.Pass:
			o.Status = Pass
		case testjson.Skip:
			o.Status = Skip
		default: // fail, or stopped while running
			o.Status = Fail
		}
	}
	return o
}

// pathVerdict: any failure fails the path; errors (tests that never ran) come next; a path
// passes when a test passed and none failed, and is skipped when the suite skipped all its tests.
func pathVerdict(tests []TestOutcome) Outcome {
	for _, want := range []Status{Fail, Error} {
		if msgs := reasons(tests, want); msgs != "" {
			return Outcome{want, msgs}
		}
	}
	if slices.ContainsFunc(tests, func(t TestOutcome) bool { return t.Status == Pass }) {
		return Outcome{Status: Pass, Reason: reasons(tests, Skip)}
	}
	return Outcome{Skip, reasons(tests, Skip)}
}

func reasons(tests []TestOutcome, s Status) string {
	var out []string
	for _, t := range tests {
		if t.Status == s {
			out = append(out, t.Name+": "+t.Reason)
		}
	}
	return strings.Join(out, "\n")
}

// strategyVerdict: every suite test must pass or skip; the expected strategy's own tests must
// pass, not skip; and the CredentialIssuer, when its status is known, must report it.
func strategyVerdict(c Catalog, expected string, st *StrategyResult) Outcome {
	for _, want := range []Status{Fail, Error} {
		if msgs := reasons(st.Tests, want); msgs != "" {
			return Outcome{want, msgs}
		}
	}
	s := c.strategy(expected)
	if s == nil {
		return Outcome{Status: Pass}
	}
	for _, name := range s.Tests {
		for _, t := range st.Tests {
			if t.Name == name && t.Status == Skip {
				return Outcome{Fail, fmt.Sprintf("expected %s, but %s skipped: %s", expected, name, t.Reason)}
			}
		}
	}
	if st.Chosen != nil && !slices.Contains(st.Chosen, expected) {
		return Outcome{Fail, fmt.Sprintf("expected %s, the CredentialIssuer reports %s successful", expected, orNone(st.Chosen))}
	}
	return Outcome{Status: Pass}
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "no strategy"
	}
	return strings.Join(list, " and ")
}
