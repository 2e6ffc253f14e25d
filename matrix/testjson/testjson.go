// Package testjson reads the event stream of `go test -json` (the test2json format) into one
// result per test, subtests included, with each test's own output. It also answers the question
// go test leaves open for e2e-framework suites: a test whose every subtest skipped is reported as
// passed, but it checked nothing, so Outcome calls it skipped.
package testjson

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Event is one line of `go test -json` output.
type Event struct {
	Time    time.Time `json:"Time"`
	Action  string    `json:"Action"`
	Package string    `json:"Package"`
	Test    string    `json:"Test"`
	Elapsed float64   `json:"Elapsed"`
	Output  string    `json:"Output"`
}

// Result is what go test reported for a test or a package.
type Result string

const (
	Pass Result = "pass"
	Fail Result = "fail"
	Skip Result = "skip"
	// Running is a test that started and never finished: the test binary crashed, timed out or
	// was killed.
	Running Result = "running"
)

// Test is one test or subtest.
type Test struct {
	Package string
	// Name is the full name, subtests included ("TestX/feature/assess").
	Name    string
	Result  Result
	Elapsed time.Duration
	// Output holds the test's own output lines, framing lines (=== RUN, --- PASS) included.
	Output   []string
	Subtests []*Test
	// seq numbers Output's lines in the order of the whole stream, to merge subtests' output.
	seq []int
}

// Package is the result of one package's test binary.
type Package struct {
	Name string
	// Result is empty while the package runs.
	Result Result
	// BuildFailed means the test binary did not compile; Output holds the compiler's messages.
	BuildFailed bool
	// Output holds the lines that belong to no test: TestMain's, the build's, the final FAIL.
	Output []string
	// Tests are the top-level tests in the order they started.
	Tests []*Test
}

// Report collects events; the zero value is ready to use.
type Report struct {
	Packages []*Package
	byName   map[string]*Package
	tests    map[string]*Test // package + "\x00" + full test name
	lines    int              // output lines seen, for Test.seq
}

// Parse reads a whole event stream. Lines that are not JSON events (a go command that failed
// before running anything) become package-less output of a package named "".
func Parse(r io.Reader) (*Report, error) {
	rep := &Report{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		rep.AddLine(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return rep, fmt.Errorf("reading go test output: %w", err)
	}
	return rep, nil
}

// AddLine adds one line of `go test -json` output and returns the event it held, if any.
func (r *Report) AddLine(line []byte) (Event, bool) {
	var e Event
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
		if s := strings.TrimRight(string(line), "\r\n"); s != "" {
			p := r.pkg("")
			p.Output = append(p.Output, s)
		}
		return Event{}, false
	}
	r.Add(e)
	return e, true
}

// Add adds one event.
func (r *Report) Add(e Event) {
	p := r.pkg(e.Package)
	if e.Test == "" {
		switch e.Action {
		case "output", "build-output":
			p.Output = appendLines(p.Output, e.Output)
		case "build-fail":
			p.BuildFailed = true
			p.Result = Fail
		case "pass", "fail", "skip":
			p.Result = Result(e.Action)
		}
		return
	}
	t := r.test(p, e.Test)
	switch e.Action {
	case "output":
		before := len(t.Output)
		t.Output = appendLines(t.Output, e.Output)
		for range t.Output[before:] {
			r.lines++
			t.seq = append(t.seq, r.lines)
		}
	case "pass", "fail", "skip":
		t.Result = Result(e.Action)
		t.Elapsed = time.Duration(e.Elapsed * float64(time.Second))
	}
}

func (r *Report) pkg(name string) *Package {
	if p, ok := r.byName[name]; ok {
		return p
	}
	if r.byName == nil {
		r.byName = map[string]*Package{}
		r.tests = map[string]*Test{}
	}
	p := &Package{Name: name}
	r.byName[name] = p
	r.Packages = append(r.Packages, p)
	return p
}

// test finds or creates a test, creating its parents first so subtests hang below them even when
// go test reports a subtest before its parent (it never does, but a truncated stream might).
func (r *Report) test(p *Package, name string) *Test {
	key := p.Name + "\x00" + name
	if t, ok := r.tests[key]; ok {
		return t
	}
	t := &Test{Package: p.Name, Name: name, Result: Running}
	r.tests[key] = t
	if i := strings.LastIndex(name, "/"); i > 0 {
		parent := r.test(p, name[:i])
		parent.Subtests = append(parent.Subtests, t)
	} else {
		p.Tests = append(p.Tests, t)
	}
	return t
}

// Package returns the named package, nil when it reported nothing.
func (r *Report) Package(name string) *Package { return r.byName[name] }

// Test returns a top-level test by package and name, nil when it never started.
func (r *Report) Test(pkg, name string) *Test { return r.tests[pkg+"\x00"+name] }

// appendLines splits test2json output, which carries one line (or a partial line) per event.
func appendLines(lines []string, out string) []string {
	out = strings.TrimSuffix(out, "\n")
	return append(lines, strings.Split(out, "\n")...)
}

// AllOutput is the test's output with its subtests', in the order go test printed it.
func (t *Test) AllOutput() []string {
	type line struct {
		seq  int
		text string
	}
	var lines []line
	var walk func(*Test)
	walk = func(t *Test) {
		for i, text := range t.Output {
			lines = append(lines, line{t.seq[i], text})
		}
		for _, s := range t.Subtests {
			walk(s)
		}
	}
	walk(t)
	slices.SortFunc(lines, func(a, b line) int { return a.seq - b.seq })
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}

// Outcome is what the test proved: fail and skip as reported, except that a passed test whose
// every leaf subtest skipped is a skip (e2e-framework reports a feature whose setup skipped as a
// passed test). The reason is the failure or skip message, without file:line prefixes.
func (t *Test) Outcome() (Result, string) {
	switch t.Result {
	case Fail:
		return Fail, failureMessage(t)
	case Skip:
		return Skip, message(t.Output)
	case Running:
		return Running, "did not finish: the test binary stopped while it ran" + panicLine(t.AllOutput())
	}
	leaves := t.leaves()
	if len(leaves) == 0 {
		return Pass, ""
	}
	for _, l := range leaves {
		if l.Result != Skip {
			return Pass, ""
		}
	}
	return Skip, message(leaves[0].Output)
}

// panicLine finds the panic (a timeout is one) that ended the test binary.
func panicLine(lines []string) string {
	for _, l := range lines {
		if s := strings.TrimSpace(l); strings.HasPrefix(s, "panic: ") {
			return " (" + s + ")"
		}
	}
	return ""
}

func (t *Test) leaves() []*Test {
	var out []*Test
	for _, s := range t.Subtests {
		if len(s.Subtests) == 0 {
			out = append(out, s)
		} else {
			out = append(out, s.leaves()...)
		}
	}
	return out
}

// failureMessage gathers the messages of the failed leaves, or of t itself.
func failureMessage(t *Test) string {
	var msgs []string
	var walk func(*Test)
	walk = func(t *Test) {
		if t.Result != Fail && t.Result != Running {
			return
		}
		if m := message(t.Output); m != "" {
			msgs = append(msgs, m)
		}
		for _, s := range t.Subtests {
			walk(s)
		}
	}
	walk(t)
	return strings.Join(msgs, "\n")
}

// message is the text of a test's log lines: framing lines dropped, "file.go:12: " cut.
func message(lines []string) string {
	var out []string
	for _, l := range lines {
		s := strings.TrimSpace(l)
		if s == "" || isFraming(s) {
			continue
		}
		out = append(out, cutFileLine(s))
	}
	return strings.Join(out, "\n")
}

func isFraming(s string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- FAIL", "--- SKIP"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// cutFileLine removes the "name_test.go:42: " prefix testing.T puts on logged lines.
func cutFileLine(s string) string {
	file, rest, ok := strings.Cut(s, ": ")
	if !ok || !strings.Contains(file, ".go:") || strings.ContainsAny(file, " \t") {
		return s
	}
	return rest
}
