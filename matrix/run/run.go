// Package run executes a matrix plan, one group (distribution x version, one cluster) at a time,
// since a single cluster fits the machine: it builds what the distribution needs, runs the
// group's e2e tests in one `go test -json`, keeps each test's output and the cluster's logs in the
// group's folder, and attributes the results. Failed tests run once more, in a second go test;
// those that pass then make their cells flaky rather than failed. Groups not started when the time budget runs out
// or after an interrupt are reported as not run.
package run

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	"sealion.dev/e2e/installation"
	"sealion.dev/matrix"
	"sealion.dev/matrix/testjson"
)

// Runner runs groups. Out, Repo and Cache must be absolute.
type Runner struct {
	Catalog matrix.Catalog
	// Repo is the repository root, where go test and the artifact commands run.
	Repo string
	// Out is the report folder; each group's logs go to Out/cells/<distribution>/<version>.
	Out string
	// Cache is the root of the Kubernetes binaries and images (SEALION_CACHE).
	Cache string
	// Budget stops starting groups once this much time has passed; zero means no budget.
	Budget time.Duration
	// TestTimeout is go test's -timeout for one group. A group that hits it leaves its cluster
	// behind (the test binary exits without teardown), so it is generous.
	TestTimeout time.Duration
	// AllowHostChanges passes the opt-in of providers that change this machine to the suites.
	AllowHostChanges bool
	// Installed runs the suites against what a user installed (e2e/installation.InstalledEnv).
	Installed bool
	// Progress receives live progress; nil discards it. Color colours its verdicts (for a
	// terminal that has not asked for NO_COLOR).
	Progress io.Writer
	Color    bool
	// GoCommand is the go command; empty means "go" from PATH.
	GoCommand string
	// Now is time.Now outside tests.
	Now func() time.Time

	// runGroup runs one group; nil means (*Runner).execute.
	runGroup func(ctx context.Context, g matrix.Group, p *progress) matrix.GroupResult
	// built remembers artifact commands: nil error once built, the error once failed.
	built map[string]error
	// cleanups undo, at the end of the run, what artifacts started.
	cleanups []cleanup
}

type cleanup struct {
	name, dir string
	args      []string
}

// Run runs the groups in order. Closing stop (an interrupt) lets the running group finish and
// starts no other; cancelling ctx also stops the running group's tests.
func (r *Runner) Run(ctx context.Context, groups []matrix.Group, stop <-chan struct{}) matrix.Results {
	now := r.now()
	res := matrix.Results{Started: now, Budget: r.Budget}
	p := newProgress(r.Progress, r.Color, r.now, now, r.Budget, groups)
	defer p.close()
	run := r.runGroup
	if run == nil {
		run = r.execute
	}
	for _, g := range groups {
		var gr matrix.GroupResult
		switch {
		case g.Blocked.Status != "":
			gr = matrix.Unrun(g, g.Blocked)
		case !g.Runs():
			gr = matrix.Unrun(g, matrix.Outcome{Status: matrix.NotBuilt, Reason: "none of its selected identity paths has e2e tests yet"})
		case stopped(stop) || ctx.Err() != nil:
			gr = matrix.Unrun(g, matrix.Outcome{Status: matrix.NotRun, Reason: "the run was interrupted before it started"})
		case r.Budget > 0 && r.now().Sub(res.Started) >= r.Budget:
			gr = matrix.Unrun(g, matrix.Outcome{Status: matrix.NotRun, Reason: fmt.Sprintf("the time budget (%s) ran out before it started", r.Budget)})
		default:
			p.start(g)
			gr = run(ctx, g, p)
		}
		p.finish(g, gr)
		res.Groups = append(res.Groups, gr)
	}
	r.cleanUp(context.WithoutCancel(ctx), p)
	res.Duration = r.now().Sub(res.Started)
	return res
}

// cleanUp runs the artifacts' cleanups, last started first.
func (r *Runner) cleanUp(ctx context.Context, p *progress) {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		c := r.cleanups[i]
		cmd := exec.CommandContext(ctx, c.args[0], c.args[1:]...)
		cmd.Dir = c.dir
		cmd.Env = append(os.Environ(), "SEALION_CACHE="+r.Cache)
		if out, err := cmd.CombinedOutput(); err != nil {
			p.printf("cleaning up %s failed: %v: %s", c.name, err, tail(strings.Split(string(out), "\n"), 5))
		} else {
			p.printf("cleaned up %s", c.name)
		}
	}
	r.cleanups = nil
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// GroupDir is where a group's logs go, relative to the report folder.
func GroupDir(g matrix.Group) string {
	return filepath.Join("cells", g.Distribution.Name, g.Version.Minor)
}

// execute builds the group's artifacts, runs its go test and attributes the results.
func (r *Runner) execute(ctx context.Context, g matrix.Group, p *progress) matrix.GroupResult {
	started := r.now()
	rel := GroupDir(g)
	dir := filepath.Join(r.Out, rel)
	finish := func(gr matrix.GroupResult) matrix.GroupResult {
		gr.Started, gr.Duration, gr.Dir = started, r.now().Sub(started), filepath.ToSlash(rel)
		gr.Files = r.files(dir)
		return gr
	}
	fail := func(format string, args ...any) matrix.GroupResult {
		return finish(matrix.Unrun(g, matrix.Outcome{Status: matrix.Error, Reason: fmt.Sprintf(format, args...)}))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fail("clearing the logs of an earlier run: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("%v", err)
	}
	for _, need := range g.Distribution.Needs {
		if err := r.build(ctx, need, g, p); err != nil {
			if cannot := (*cannotRunError)(nil); errors.As(err, &cannot) {
				return finish(matrix.Unrun(g, matrix.Outcome{Status: matrix.CannotRun, Reason: cannot.reason}))
			}
			return fail("%v", err)
		}
	}

	pkgs, run := g.GoTest(r.Catalog)
	rep, exitErr, err := r.goTest(ctx, g, dir, pkgs, run, p)
	if err != nil {
		return fail("running go test: %v", err)
	}
	chosen, entries, err := savedStrategies(filepath.Join(dir, "e2e-logs"))
	if err != nil {
		p.printf("%s: %v", g.Name(), err)
	}
	gr := matrix.Attribute(r.Catalog, g, rep, chosen)
	gr.Strategy.Entries = entries
	if r.Installed {
		if gr.Installation, err = installationFound(filepath.Join(dir, "e2e-logs")); err != nil {
			p.printf("%s: %v", g.Name(), err)
		}
	}
	if err := writeTestLogs(&gr, rep, dir, rel, firstLog); err != nil {
		p.printf("%s: writing test logs: %v", g.Name(), err)
	}
	// A test binary that stopped mid-test (a timeout, a crash) left its cluster behind: a second
	// go test would collide with it.
	if failed := matrix.FailedTests(gr); len(failed) > 0 && ctx.Err() == nil && !stoppedMidTest(rep) {
		gr, exitErr = r.retry(ctx, g, gr, failed, exitErr, dir, rel, p)
	}
	if exitErr != nil && (gr.Status == matrix.Pass || gr.Status == matrix.Flaky) {
		// Every check passed, yet go test failed: say so rather than hide it.
		var lines []string
		for _, pkg := range rep.Packages {
			lines = append(lines, pkg.Output...)
		}
		gr.Outcome = matrix.Outcome{Status: matrix.Error, Reason: fmt.Sprintf("go test failed (%v) although every check passed: %s",
			exitErr, tail(lines, 5))}
	}
	return finish(gr)
}

// retry runs a group's failed tests once more, in a second go test of their packages whose files
// (go test output, suite logs, per-test logs) go to the group's rerun folder next to the first
// run's, and folds the outcome in: a test that passes now is flaky. The suite starts its own
// cluster of the same distribution and version for it, as for every go test. It returns the
// result and the go test exit error that now stands.
func (r *Runner) retry(ctx context.Context, g matrix.Group, gr matrix.GroupResult, failed []matrix.TestRef,
	firstExit error, dir, rel string, p *progress) (matrix.GroupResult, error) {
	var pkgs, names []string
	for _, t := range failed {
		if !slices.Contains(pkgs, t.Package) {
			pkgs = append(pkgs, t.Package)
		}
		names = append(names, t.Name)
	}
	p.printf("%s: running the failed %s once more (logs in %s)", g.Name(), strings.Join(names, ", "), filepath.Join(rel, rerunDir))
	dir, rel = filepath.Join(dir, rerunDir), filepath.Join(rel, rerunDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.printf("%s: not run again: %v", g.Name(), err)
		return gr, firstExit
	}
	rep, exitErr, err := r.goTest(ctx, g, dir, pkgs, "^("+strings.Join(names, "|")+")$", p)
	if err != nil {
		p.printf("%s: not run again: running go test: %v", g.Name(), err)
		return gr, firstExit
	}
	gr = matrix.Retried(r.Catalog, gr, rep)
	if err := writeTestLogs(&gr, rep, dir, rel, retryLog); err != nil {
		p.printf("%s: writing test logs: %v", g.Name(), err)
	}
	return gr, exitErr
}

func stoppedMidTest(rep *testjson.Report) bool {
	for _, pkg := range rep.Packages {
		if slices.ContainsFunc(pkg.Tests, func(t *testjson.Test) bool { return t.Result == testjson.Running }) {
			return true
		}
	}
	return false
}

// rerunDir is the folder, inside a group's, of the re-run of its failed tests.
const rerunDir = "rerun"

// build runs an artifact's command, once per distinct command and run, logging to Out/prepare.
func (r *Runner) build(ctx context.Context, name string, g matrix.Group, p *progress) error {
	a := r.Catalog.Artifact(name)
	if a == nil {
		return fmt.Errorf("unknown artifact %q", name)
	}
	values := map[string]string{"Release": g.Version.Release, "Cache": r.Cache, "Repo": r.Repo}
	args, err := render(a.Command, values)
	if err != nil {
		return fmt.Errorf("artifact %s: %w", name, err)
	}
	var undo []string
	if len(a.Cleanup) > 0 {
		if undo, err = render(a.Cleanup, values); err != nil {
			return fmt.Errorf("artifact %s cleanup: %w", name, err)
		}
	}
	key := a.Dir + "\x00" + strings.Join(args, "\x00")
	if r.built == nil {
		r.built = map[string]error{}
	}
	if err, done := r.built[key]; done {
		return err
	}
	logName := name
	if g.Version.Release != "" && slices.ContainsFunc(a.Command, func(s string) bool { return strings.Contains(s, "{{.Release}}") }) {
		logName += "-" + g.Version.Release
	}
	logRel := filepath.Join("prepare", logName+".log")
	if err := os.MkdirAll(filepath.Join(r.Out, "prepare"), 0o755); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(r.Out, logRel))
	if err != nil {
		return err
	}
	defer log.Close()
	p.printf("building %s: %s (log: %s)", name, strings.Join(args, " "), logRel)
	began := r.now()
	var tailBuf tailWriter
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = filepath.Join(r.Repo, a.Dir)
	cmd.Stdout = io.MultiWriter(log, &tailBuf)
	cmd.Stderr = cmd.Stdout
	cmd.Env = append(os.Environ(), "SEALION_CACHE="+r.Cache)
	err = cmd.Run()
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && a.CannotRunExit != 0 && exit.ExitCode() == a.CannotRunExit {
		err = &cannotRunError{reason: fmt.Sprintf("%s (log: %s)", tail(tailBuf.lines(), 1), logRel)}
	} else if err != nil {
		err = fmt.Errorf("building %s failed: %v: %s (log: %s)", name, err, tail(tailBuf.lines(), 5), logRel)
	} else {
		p.printf("built %s in %s", name, r.now().Sub(began).Round(time.Second))
		if undo != nil {
			r.cleanups = append(r.cleanups, cleanup{name: name, dir: cmd.Dir, args: undo})
		}
	}
	r.built[key] = err
	return err
}

// cannotRunError is an artifact that cannot be made on this machine (Artifact.CannotRunExit).
type cannotRunError struct{ reason string }

func (e *cannotRunError) Error() string { return e.reason }

func render(command []string, values map[string]string) ([]string, error) {
	out := make([]string, len(command))
	for i, arg := range command {
		t, err := template.New("arg").Option("missingkey=error").Parse(arg)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		if err := t.Execute(&b, values); err != nil {
			return nil, err
		}
		if b.Len() == 0 && arg != "" {
			return nil, fmt.Errorf("%q is empty for this cell (a cluster-version distribution cannot need it)", arg)
		}
		out[i] = b.String()
	}
	return out, nil
}

// goTest runs tests of the group (pkgs, -run run), streaming events to go-test.json and output.log, and returns
// the report and go test's exit error.
func (r *Runner) goTest(ctx context.Context, g matrix.Group, dir string, pkgs []string, run string, p *progress) (*testjson.Report, error, error) {
	goCmd := r.GoCommand
	if goCmd == "" {
		goCmd = "go"
	}
	timeout := r.TestTimeout
	if timeout <= 0 {
		timeout = time.Hour
	}
	args := append([]string{"test", "-json", "-count=1", "-p=1", "-timeout=" + timeout.String()}, pkgs...)
	args = append(args, "-run", run)
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = r.Repo
	cmd.Env = append(os.Environ(), r.env(g, dir)...)
	// Its own process group: an interrupt of the runner lets the group finish its teardown, and
	// cancelling ctx interrupts the whole group (go, the test binary) rather than killing go alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.WaitDelay = 2 * time.Minute

	jsonFile, err := os.Create(filepath.Join(dir, "go-test.json"))
	if err != nil {
		return nil, nil, err
	}
	defer jsonFile.Close()
	textFile, err := os.Create(filepath.Join(dir, "output.log"))
	if err != nil {
		return nil, nil, err
	}
	defer textFile.Close()
	fmt.Fprintf(textFile, "# cd %s && %s %s\n# env: %s\n", r.Repo, goCmd, shellQuote(args), strings.Join(r.env(g, dir), " "))

	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	rep := &testjson.Report{}
	var mu sync.Mutex
	handle := func(line []byte) {
		mu.Lock()
		defer mu.Unlock()
		jsonFile.Write(append(line, '\n'))
		e, ok := rep.AddLine(line)
		switch {
		case !ok:
			textFile.Write(append(line, '\n'))
		case e.Output != "":
			io.WriteString(textFile, e.Output)
		}
		switch {
		case ok && e.Test == "" && e.Output != "":
			p.suiteLine(g, e.Output)
		case ok && e.Test != "" && !strings.Contains(e.Test, "/"):
			t := rep.Test(e.Package, e.Test)
			p.testEvent(g, e, t)
			// Whoever reads only the runner's output (a CI log) sees why a test failed.
			if e.Action == "fail" && t != nil {
				p.printf("%s: %s output (last %d lines):\n    %s", g.Name(), e.Test, failedTestTail,
					strings.Join(lastLines(t.AllOutput(), failedTestTail), "\n    "))
			}
		}
	}
	var wg sync.WaitGroup
	for _, src := range []io.Reader{stdout, stderr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(src)
			sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
			for sc.Scan() {
				handle(sc.Bytes())
			}
		}()
	}
	wg.Wait()
	exitErr := cmd.Wait()
	var ee *exec.ExitError
	if exitErr != nil && !errors.As(exitErr, &ee) {
		return rep, nil, exitErr
	}
	return rep, exitErr, nil
}

// failedTestTail is how much of a failed test's output the progress shows.
const failedTestTail = 40

// env is what a group's suite is told: provider, log folder, version and its binaries.
func (r *Runner) env(g matrix.Group, dir string) []string {
	env := []string{
		"SEALION_E2E_PROVIDER=" + g.Distribution.Name,
		"SEALION_E2E_LOGS=" + filepath.Join(dir, "e2e-logs"),
		"SEALION_CACHE=" + r.Cache,
	}
	if g.Version.Release != "" {
		env = append(env, "SEALION_E2E_KUBE_VERSION="+g.Version.Release,
			"SEALION_KUBE_BIN_DIR="+filepath.Join(r.Cache, "kubernetes", g.Version.Release, "bin"))
	}
	if r.AllowHostChanges {
		env = append(env, "SEALION_ALLOW_HOST_CHANGES=true")
	}
	if r.Installed {
		env = append(env, installation.InstalledEnv+"=true")
	}
	return env
}

// savedStrategies reads the CredentialIssuers the suite saved: the strategies chosen at its end,
// and every strategy's entry (see matrix.StrategyEntries); nil when it saved none.
func savedStrategies(logs string) ([]string, []matrix.StrategyEntry, error) {
	var lists [][]byte
	for _, name := range []string{matrix.CredentialIssuersFile, matrix.CredentialIssuersCSREnabledFile} {
		file := savedBySuite(logs, name)
		if file == "" {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, err
		}
		lists = append(lists, data)
	}
	if len(lists) == 0 {
		return nil, nil, nil
	}
	entries, err := matrix.StrategyEntries(lists...)
	if err != nil {
		return nil, nil, err
	}
	// Only the last list says what clients are handed: the others were a test's.
	if savedBySuite(logs, matrix.CredentialIssuersFile) == "" {
		return nil, entries, nil
	}
	chosen, err := matrix.ChosenStrategies(lists[0])
	return chosen, entries, err
}

// installationFound reads the installation the suite found and saved; nil when it saved none
// (its setup failed before).
func installationFound(logs string) (*installation.Installation, error) {
	file := savedBySuite(logs, installation.File)
	if file == "" {
		return nil, nil
	}
	inst, err := installation.Read(file)
	if err != nil {
		return nil, err
	}
	return &inst, nil
}

// savedBySuite is the path of the file name the suite saved in its cluster's log folder (the one
// folder of logs), empty when there is none.
func savedBySuite(logs, name string) string {
	found, _ := filepath.Glob(filepath.Join(logs, "*", name))
	if len(found) == 0 {
		return ""
	}
	return found[0]
}

// writeTestLogs writes the output of each test of rep to tests/<name>.log in dir and links it
// from the result, in the field logOf gives (nil: the test has none there).
func writeTestLogs(gr *matrix.GroupResult, rep *testjson.Report, dir, rel string, logOf func(*matrix.TestOutcome) *string) error {
	var errs []error
	link := func(tests []matrix.TestOutcome) {
		for i := range tests {
			t, field := rep.Test(tests[i].Package, tests[i].Name), logOf(&tests[i])
			if t == nil || field == nil {
				continue
			}
			name := filepath.Join("tests", tests[i].Name+".log")
			if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(t.AllOutput(), "\n")+"\n"), 0o644); err != nil {
				errs = append(errs, err)
				continue
			}
			*field = filepath.ToSlash(filepath.Join(rel, name))
		}
	}
	if gr.Strategy != nil {
		link(gr.Strategy.Tests)
	}
	for i := range gr.Paths {
		link(gr.Paths[i].Tests)
	}
	return errors.Join(errs...)
}

// firstLog and retryLog are where a test's log of the first run and of the re-run are linked.
func firstLog(t *matrix.TestOutcome) *string { return &t.Log }

func retryLog(t *matrix.TestOutcome) *string {
	if t.Retry == nil {
		return nil
	}
	return &t.Retry.Log
}

// files lists every file below dir, relative to the report folder.
func (r *Runner) files(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if rel, err := filepath.Rel(r.Out, path); err == nil {
				out = append(out, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	return out
}

func shellQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " |()$*?'\"^") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// tailWriter keeps the last lines written to it.
type tailWriter struct{ buf bytes.Buffer }

func (t *tailWriter) Write(b []byte) (int, error) {
	t.buf.Write(b)
	if t.buf.Len() > 64*1024 {
		t.buf.Next(t.buf.Len() - 32*1024)
	}
	return len(b), nil
}

func (t *tailWriter) lines() []string { return strings.Split(t.buf.String(), "\n") }

func tail(lines []string, n int) string { return strings.Join(lastLines(lines, n), " / ") }

// lastLines is the last n non-blank lines, trimmed.
func lastLines(lines []string, n int) []string {
	var kept []string
	for _, l := range lines {
		if s := strings.TrimSpace(l); s != "" {
			kept = append(kept, s)
		}
	}
	if len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	return kept
}
