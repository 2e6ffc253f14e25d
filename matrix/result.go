package matrix

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"sealion.dev/e2e/installation"
	"sealion.dev/matrix/kubeversions"
	"sealion.dev/matrix/testjson"
)

// Status is a cell's verdict.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	// Flaky is a cell whose failed tests all passed when run again: it does not fail the run,
	// yet is listed, since the first failure may be a real, intermittent bug.
	Flaky Status = "flaky"
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
	return slices.Index([]Status{"", NotBuilt, CannotRun, NotRun, Skip, Pass, Flaky, Error, Fail}, s)
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
	// Retry is the test's second run, when its first failed; Status is then Flaky if the second
	// passed, Fail otherwise, and Reason the first run's failure.
	Retry *TestRun `json:"retry,omitempty"`
}

// TestRun is one more run of a test.
type TestRun struct {
	Status  Status        `json:"status"`
	Reason  string        `json:"reason,omitempty"`
	Elapsed time.Duration `json:"elapsed"`
	Log     string        `json:"log,omitempty"`
}

// PathResult is one cell: an identity path in a group.
type PathResult struct {
	Name string `json:"name"`
	Outcome
	Tests []TestOutcome `json:"tests,omitempty"`
	// Elapsed is the time its tests took, re-runs included.
	Elapsed time.Duration `json:"elapsed,omitempty"`
	// Change is how the cell compares with a baseline run, empty when unchanged or not compared.
	Change Change `json:"change,omitempty"`
}

// Change is how a cell's verdict moved since a baseline run (see package matrix/baseline).
type Change string

const (
	// Regression was pass or flaky and now fails or errs.
	Regression Change = "regression"
	// Fixed failed or erred and now passes.
	Fixed Change = "fixed"
	// NewPass had no cell in the baseline and now passes.
	NewPass Change = "new pass"
)

// StrategyResult is the group's CredentialIssuer check, the install included.
type StrategyResult struct {
	// Expected is the distribution's expected strategy, empty when not asserted.
	Expected string `json:"expected,omitempty"`
	// Chosen are the strategies the CredentialIssuer reported successful at the end of the run.
	Chosen []string `json:"chosen,omitempty"`
	// Entries are what the CredentialIssuer said of each strategy: at the end of the run, or for
	// one listed only while a test enabled it, then.
	Entries []StrategyEntry `json:"entries,omitempty"`
	Outcome
	Tests []TestOutcome `json:"tests,omitempty"`
	// Elapsed is the time its tests took, re-runs included.
	Elapsed time.Duration `json:"elapsed,omitempty"`
}

// Mismatch reports whether the CredentialIssuer is known to report strategies other than the
// expected one.
func (s StrategyResult) Mismatch() bool {
	return s.Expected != "" && s.Chosen != nil && !slices.Contains(s.Chosen, s.Expected)
}

// GroupResult is one distribution x version: its cluster's strategy and its cells.
type GroupResult struct {
	Distribution string `json:"distribution"`
	// Simulates names what the distribution imitates on this machine ("GKE"), empty for a real
	// one (Distribution.Simulates).
	Simulates string               `json:"simulates,omitempty"`
	Version   kubeversions.Version `json:"version"`
	// Outcome is the worst of the strategy's and the paths', or why the group did not run.
	Outcome
	Strategy *StrategyResult `json:"strategy,omitempty"`
	Paths    []PathResult    `json:"paths"`
	// Installation is the Concierge and Supervisor a user installed that the group tested (matrix
	// --installed), as the suite found them; nil where the suite installed ours.
	Installation *installation.Installation `json:"installation,omitempty"`
	// Dir is the group's log folder and Files every file in it, relative to the report folder.
	Dir     string    `json:"dir,omitempty"`
	Files   []string  `json:"files,omitempty"`
	Started time.Time `json:"started,omitzero"`
	// Duration is the group's wall time: builds, the cluster's creation and teardown, its tests
	// and their re-run. TestTime is the part its tests took.
	Duration time.Duration `json:"duration,omitempty"`
	TestTime time.Duration `json:"testTime,omitempty"`
}

// Name is "distribution/version".
func (g GroupResult) Name() string { return g.Distribution + "/" + g.Version.Minor }

// Label is the distribution, marked when it is a simulation: "gke (simulated GKE)".
func (g GroupResult) Label() string {
	if g.Simulates == "" {
		return g.Distribution
	}
	return g.Distribution + " (simulated " + g.Simulates + ")"
}

// Results are a whole run.
type Results struct {
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	// Budget is the run's time budget, zero for none.
	Budget time.Duration `json:"budget,omitempty"`
	// Host describes the machine (hostcheck) and Commit the checkout.
	Host   string `json:"host,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Baseline is the report the cells' Change compares with, empty when none.
	Baseline string        `json:"baseline,omitempty"`
	Groups   []GroupResult `json:"groups"`
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
	r := GroupResult{Distribution: g.Distribution.Name, Simulates: g.Distribution.Simulates, Version: g.Version, Outcome: why}
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
	r := GroupResult{Distribution: g.Distribution.Name, Simulates: g.Distribution.Simulates, Version: g.Version}
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
	r.settle()
	return r
}

// settle sums the tests' times and makes the group's verdict the worst of its strategy's and
// its paths'.
func (r *GroupResult) settle() {
	r.TestTime = 0
	if st := r.Strategy; st != nil {
		st.Elapsed = elapsed(st.Tests)
		r.TestTime += st.Elapsed
		r.Outcome = st.Outcome
	}
	for i := range r.Paths {
		p := &r.Paths[i]
		p.Elapsed = elapsed(p.Tests)
		r.TestTime += p.Elapsed
		if p.Status.severity() > r.Status.severity() {
			r.Outcome = Outcome{Status: p.Status}
		}
	}
	switch {
	case r.Reason != "":
	case r.Status.Failed():
		r.Reason = "see the failed cells"
	case r.Status == Flaky:
		r.Reason = "see the flaky cells"
	}
}

func elapsed(tests []TestOutcome) time.Duration {
	var d time.Duration
	for _, t := range tests {
		d += t.Elapsed
		if t.Retry != nil {
			d += t.Retry.Elapsed
		}
	}
	return d
}

// TestRef names a test: its package and top-level name.
type TestRef struct{ Package, Name string }

// FailedTests are the tests that failed in a group's strategy checks and cells, in order: those a
// re-run may find flaky. Tests that never ran (errors) are not among them: running them again
// would fail the same way.
func FailedTests(r GroupResult) []TestRef {
	var out []TestRef
	add := func(status Status, tests []TestOutcome) {
		if status != Fail {
			return
		}
		for _, t := range tests {
			if t.Status == Fail && t.Retry == nil {
				out = append(out, TestRef{t.Package, t.Name})
			}
		}
	}
	if r.Strategy != nil {
		add(r.Strategy.Status, r.Strategy.Tests)
	}
	for _, p := range r.Paths {
		add(p.Status, p.Tests)
	}
	return out
}

// Retried folds the re-run of a group's failed tests (rerun is its `go test -json` report) into
// the group's first result: a test that passed the second time is flaky, one that did not pass
// stays failed, and the verdicts of the strategy, the paths and the group are drawn again. The
// first run's failure stays each test's reason.
func Retried(c Catalog, first GroupResult, rerun *testjson.Report) GroupResult {
	r := first
	retry := func(tests []TestOutcome) []TestOutcome {
		tests = slices.Clone(tests)
		for i, t := range tests {
			if t.Status != Fail || t.Retry != nil {
				continue
			}
			again := testOutcome(rerun, t.Package, t.Name, suiteFailure(rerun, t.Package))
			tests[i].Retry = &TestRun{Status: again.Status, Reason: again.Reason, Elapsed: again.Elapsed}
			if again.Status == Pass {
				tests[i].Status = Flaky
			}
		}
		return tests
	}
	if first.Strategy != nil && first.Strategy.Status == Fail {
		st := *first.Strategy
		st.Tests = retry(st.Tests)
		st.Outcome = strategyVerdict(c, st.Expected, &st)
		r.Strategy = &st
	}
	r.Paths = slices.Clone(first.Paths)
	for i, p := range r.Paths {
		if p.Status == Fail {
			r.Paths[i].Tests = retry(p.Tests)
			r.Paths[i].Outcome = pathVerdict(r.Paths[i].Tests)
		}
	}
	r.Outcome = Outcome{}
	r.settle()
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

// pathVerdict: any failure fails the path; errors (tests that never ran) come next, then tests
// that passed only when run again (flaky, with their first failure); a path passes when a test passed and none failed, and is skipped when the suite skipped all its tests.
func pathVerdict(tests []TestOutcome) Outcome {
	for _, want := range []Status{Fail, Error, Flaky} {
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
	if s := c.strategy(expected); s != nil {
		for _, name := range s.Tests {
			for _, t := range st.Tests {
				if t.Name == name && t.Status == Skip {
					return Outcome{Fail, fmt.Sprintf("expected %s, but %s skipped: %s", expected, name, t.Reason)}
				}
			}
		}
	}
	if st.Mismatch() {
		return Outcome{Fail, fmt.Sprintf("expected %s, the CredentialIssuer reports %s successful", expected, orNone(st.Chosen))}
	}
	if msgs := reasons(st.Tests, Flaky); msgs != "" {
		return Outcome{Flaky, msgs}
	}
	return Outcome{Status: Pass}
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "no strategy"
	}
	return strings.Join(list, " and ")
}
