package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The baseline's exchange rate varies by 20% across its three runs (its noise); its login rate
// by 2%.
const baselineText = `goos: linux
cpu: Test CPU
Unit req/s better=higher
Unit p50-ms better=lower
BenchmarkExchange/clients=1-2 1 500 req/s 2.0 p50-ms
BenchmarkExchange/clients=1-2 1 450 req/s 2.1 p50-ms
BenchmarkExchange/clients=1-2 1 550 req/s 1.9 p50-ms
BenchmarkLogin-2 1 100 req/s 10 p50-ms
BenchmarkLogin-2 1 101 req/s 10 p50-ms
BenchmarkLogin-2 1 99 req/s 10 p50-ms
BenchmarkGone 1 7 req/s
BenchmarkGone 1 7 req/s
`

func TestCompare(t *testing.T) {
	baseline, err := readFiles(write(t, "baseline.txt", baselineText))
	if err != nil {
		t.Fatal(err)
	}
	current, err := readFiles(write(t, "current.txt", `goos: linux
commit: abc
Unit req/s better=higher
Unit p50-ms better=lower
BenchmarkExchange/clients=1-2 1 380 req/s 2.0 p50-ms
BenchmarkLogin-2 1 85 req/s 13 p50-ms
BenchmarkNew 1 3 req/s
BenchmarkLogin-2 1 85 things
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]verdict{
		// 24% worse, but the baseline's noise is 20%: within 10% + 20%.
		"Exchange/clients=1 req/s":  pass,
		"Exchange/clients=1 p50-ms": pass,
		// 15% worse where the noise is 2%.
		"Login req/s":  regressed,
		"Login p50-ms": regressed,
		"New req/s":    unknown,
		"Login things": unknown,
		"Gone req/s":   missing,
	}
	got := map[string]verdict{}
	for _, c := range compare(current, baseline, gateOf(current, baseline, 0.10, false)) {
		got[c.key.String()] = c.verdict
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	for _, c := range compare(current, baseline, gateOf(current, baseline, 0.10, true)) {
		if c.verdict == missing {
			t.Errorf("a subset run reported %s missing", c.key)
		}
	}
}

// A subset run (the short form, on any machine) gates ratios and counts, not rates or latencies:
// the machine it runs on may be slower than the baseline's without anything having regressed.
func TestSubsetGatesMachineIndependentFigures(t *testing.T) {
	units := "Unit req/s better=higher\nUnit ratio better=higher\nUnit requests/call better=lower\n"
	baseline, err := readFiles(write(t, "b.txt", units+"BenchmarkX 1 100 req/s 0.8 ratio 1 requests/call\nBenchmarkX 1 100 req/s 0.8 ratio 1 requests/call\n"))
	if err != nil {
		t.Fatal(err)
	}
	current, err := readFiles(write(t, "c.txt", units+"BenchmarkX 1 50 req/s 0.4 ratio 2 requests/call\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]verdict{"req/s": speedOnly, "ratio": regressed, "requests/call": regressed}
	for _, c := range compare(current, baseline, gateOf(current, baseline, 0.10, true)) {
		if c.verdict != want[c.unit] {
			t.Errorf("%s: %q, want %q", c.key, c.verdict, want[c.unit])
		}
	}
	for _, c := range compare(current, baseline, gateOf(current, baseline, 0.10, false)) {
		if !c.verdict.fails() {
			t.Errorf("a full run: %s %q, want a failure", c.key, c.verdict)
		}
	}
}

// A full run gates rates and latencies only on a machine as fast as the baseline's, which the
// kube-apiserver's own rate in the same run says: on a slower one (a shared host's busy day) they
// are reported, and so are ratios at one client; other ratios and counts are still gated.
func TestFullRunGatesSpeedOnAMachineAsFast(t *testing.T) {
	units := "Unit req/s better=higher\nUnit ratio better=higher\n"
	baseline, err := readFiles(write(t, "b.txt", units+
		"BenchmarkKubeAPI/request=SelfSubjectReview/clients=1 1 1000 req/s\nBenchmarkKubeAPI/request=SelfSubjectReview/clients=16 1 3000 req/s\nBenchmarkX 1 100 req/s 0.8 ratio\nBenchmarkXOverY/clients=1 1 0.8 ratio\n"+
		"BenchmarkKubeAPI/request=SelfSubjectReview/clients=1 1 1040 req/s\nBenchmarkKubeAPI/request=SelfSubjectReview/clients=16 1 3060 req/s\nBenchmarkX 1 100 req/s 0.8 ratio\nBenchmarkXOverY/clients=1 1 0.8 ratio\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, reference string
		slower          bool
		want            map[string]verdict // by unit, for X; "one client" for XOverY/clients=1
	}{
		// The reference within 10% and its noise (2-4%) of the baseline's.
		{"as fast", "clients=1 1 950 req/s\nBenchmarkKubeAPI/request=SelfSubjectReview/clients=16 1 2900", false, map[string]verdict{"req/s": regressed, "ratio": regressed, "one client": regressed}},
		{"slower", "clients=1 1 700 req/s\nBenchmarkKubeAPI/request=SelfSubjectReview/clients=16 1 1500", true, map[string]verdict{"req/s": speedOnly, "ratio": regressed, "one client": speedOnly}},
	} {
		current, err := readFiles(write(t, "c.txt", units+"BenchmarkKubeAPI/request=SelfSubjectReview/"+tt.reference+" req/s\nBenchmarkX 1 50 req/s 0.4 ratio\nBenchmarkXOverY/clients=1 1 0.4 ratio\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := speedOf(current, baseline).slower(0.10); got != tt.slower {
			t.Errorf("%s: slower %v, want %v", tt.name, got, tt.slower)
		}
		for _, c := range compare(current, baseline, gateOf(current, baseline, 0.10, false)) {
			if c.name == "X" && c.verdict != tt.want[c.unit] {
				t.Errorf("%s: %s %q, want %q", tt.name, c.key, c.verdict, tt.want[c.unit])
			}
			if c.name == "XOverY/clients=1" && c.verdict != tt.want["one client"] {
				t.Errorf("%s: %s %q, want %q", tt.name, c.key, c.verdict, tt.want["one client"])
			}
		}
	}
	// Without the reference in the run, the machine's speed is unknown and everything is gated.
	current, err := readFiles(write(t, "c.txt", units+"BenchmarkX 1 50 req/s 0.4 ratio\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range compare(current, baseline, gateOf(current, baseline, 0.10, false)) {
		if c.name == "X" && c.verdict != regressed {
			t.Errorf("no reference: %s %q, want %q", c.key, c.verdict, regressed)
		}
	}
}

// A lower-is-better figure at zero (an exchange that reads no Secret) fails when it comes back,
// though no ratio can be taken of zero; noise below the tolerance passes.
func TestZeroBaselineOfALowerIsBetterFigure(t *testing.T) {
	units := "Unit requests/call better=lower\nUnit req/s better=higher\n"
	baseline, err := readFiles(write(t, "b.txt", units+"BenchmarkX 1 0 requests/call 0 req/s\nBenchmarkX 1 0 requests/call 0 req/s\n"))
	if err != nil {
		t.Fatal(err)
	}
	for current, want := range map[string]verdict{"0.003": pass, "1.0": regressed} {
		figs, err := readFiles(write(t, "c.txt", units+"BenchmarkX 1 "+current+" requests/call 5 req/s\n"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range compare(figs, baseline, gateOf(figs, baseline, 0.10, true)) {
			w := map[string]verdict{"requests/call": want, "req/s": ungated}[c.unit]
			if c.verdict != w {
				t.Errorf("%s at %s: %q, want %q", c.key, current, c.verdict, w)
			}
		}
	}
}

// A measurement at zero (a server's CPU per call on a path that does not reach it) and a difference
// below zero (the latency a path adds, within the noise) have no ratio to gate: they are reported.
func TestZeroOrNegativeBaselineOfAMeasurement(t *testing.T) {
	units := "Unit cpu-us/call better=lower\nUnit p50-ms better=lower\n"
	baseline, err := readFiles(write(t, "b.txt", units+"BenchmarkX 1 0 cpu-us/call -1.9 p50-ms\nBenchmarkX 1 0 cpu-us/call -2.5 p50-ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	current, err := readFiles(write(t, "c.txt", units+"BenchmarkX 1 8 cpu-us/call -1.9 p50-ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range compare(current, baseline, gateOf(current, baseline, 0.10, false)) {
		if c.verdict != ungated {
			t.Errorf("%s: %q, want %q", c.key, c.verdict, ungated)
		}
	}
}

func TestImprovementAndUngatedUnits(t *testing.T) {
	baseline, err := readFiles(write(t, "b.txt", "BenchmarkX 1 100 req/s 5 widgets\nUnit req/s better=higher\nBenchmarkX 1 100 req/s 5 widgets\n"))
	if err != nil {
		t.Fatal(err)
	}
	current, err := readFiles(write(t, "c.txt", "Unit req/s better=higher\nBenchmarkX 1 200 req/s 50 widgets\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range compare(current, baseline, gateOf(current, baseline, 0.10, false)) {
		want := map[string]verdict{"req/s": improved, "widgets": ungated}[c.unit]
		if c.verdict != want {
			t.Errorf("%s: %q, want %q", c.key, c.verdict, want)
		}
	}
}

func TestGoals(t *testing.T) {
	goals, err := readGoals(write(t, "goals.yaml", `
- {name: Exchange/clients=1, unit: req/s, min: 400, why: enough}
- {name: Exchange/clients=1, unit: p50-ms, max: 1, why: fast}
- {name: Absent, unit: req/s, min: 1, why: measured}
`))
	if err != nil {
		t.Fatal(err)
	}
	current, err := readFiles(write(t, "c.txt", "BenchmarkExchange/clients=1 1 500 req/s 2 p50-ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	var verdicts []verdict
	for _, g := range checkGoals(current, goals, false) {
		verdicts = append(verdicts, g.verdict)
	}
	if strings.Join(strs(verdicts), ",") != "ok,FAILED,MISSING" {
		t.Errorf("verdicts %v, want ok, FAILED, MISSING", verdicts)
	}
	if n := len(checkGoals(current, goals, true)); n != 2 {
		t.Errorf("a subset run checked %d goals, want the 2 it has figures for", n)
	}
	for _, bad := range []string{"- {name: X, unit: req/s, why: no bound}", "- {name: X, unit: req/s, min: 1, typo: 2}"} {
		if _, err := readGoals(write(t, "bad.yaml", bad)); err == nil {
			t.Errorf("readGoals accepted %q", bad)
		}
	}
}

// A goal about one configuration is judged in it and only reported in another, with why; a run
// that does not record the configuration is not judged either.
func TestGoalsWhere(t *testing.T) {
	goals, err := readGoals(write(t, "goals.yaml", `
- {name: Stream, unit: ratio, min: 0.9, why: keeps up, where: {proxy-cpus: own}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		config, want, elsewhere string
	}{
		{"proxy-cpus: own\n", "FAILED", ""},
		{"proxy-cpus: shared\n", "not judged", "it needs proxy-cpus: own, this run's is shared"},
		{"", "not judged", "it needs proxy-cpus: own, which this run does not record"},
	} {
		current, err := readFiles(write(t, "c.txt", tc.config+"BenchmarkStream 1 0.7 ratio\n"))
		if err != nil {
			t.Fatal(err)
		}
		got := checkGoals(current, goals, false)
		if len(got) != 1 || string(got[0].verdict) != tc.want || got[0].elsewhere != tc.elsewhere || got[0].verdict.fails() != (tc.want == "FAILED") {
			t.Errorf("config %q: %+v, want %s (%s)", tc.config, got, tc.want, tc.elsewhere)
		}
	}
	out := t.TempDir()
	shared := write(t, "shared.txt", "proxy-cpus: shared\nBenchmarkStream 1 0.7 ratio\n")
	if err := run("", write(t, "g.yaml", "- {name: Stream, unit: ratio, min: 0.9, why: keeps up, where: {proxy-cpus: own}}\n"), out, 0.10, false, []string{shared}); err != nil {
		t.Errorf("a goal not judged failed the run: %v", err)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if want := "| Stream | ratio | >= 0.9 | 700.0m | not judged (it needs proxy-cpus: own, this run's is shared) | keeps up |"; err != nil || !strings.Contains(string(report), want) {
		t.Errorf("the report lacks %q (%v):\n%s", want, err, report)
	}
}

func strs(vs []verdict) []string {
	var out []string
	for _, v := range vs {
		out = append(out, string(v))
	}
	return out
}

// A run writes its report and one PNG for each curve, and fails on a regression.
func TestRun(t *testing.T) {
	out := t.TempDir()
	current := write(t, "current.txt", `Unit req/s better=higher
BenchmarkProxyGET/path=proxy/clients=1 1 900 req/s
BenchmarkProxyGET/path=proxy/clients=10 1 2000 req/s
BenchmarkProxyGET/path=proxy/clients=500 1 2100 req/s
BenchmarkProxyGET/path=direct/clients=1 1 1000 req/s
BenchmarkProxyGET/path=direct/clients=10 1 2200 req/s
BenchmarkProxyGET/path=direct/clients=500 1 2300 req/s
BenchmarkLogin 1 50 req/s
`)
	baseline := write(t, "baseline.txt", baselineText)
	err := run(baseline, "", out, 0.10, false, []string{current})
	// The login's regression and the four figures of the baseline this run lacks.
	if err == nil || !strings.Contains(err.Error(), "5 figures regressed") {
		t.Errorf("run: %v, want the login's regression and four missing figures", err)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Login | req/s | 100.0 | 50.00 | 0.50 | 2% | REGRESSED |",
		"### ProxyGET: req/s by clients",
		"| clients | path=proxy | path=direct |",
		"| 500 | 2.100k | 2.300k |",
	} {
		if !strings.Contains(string(report), want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	png, err := os.ReadFile(filepath.Join(out, "ProxyGET-req_s-by-clients.png"))
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Errorf("the curve's plot: %v", err)
	}
	ok := write(t, "ok.txt", "Unit req/s better=higher\nBenchmarkLogin 1 98 req/s\n")
	if err := run(baseline, "", t.TempDir(), 0.10, true, []string{ok}); err != nil {
		t.Errorf("a run within the tolerance failed: %v", err)
	}
	// A baseline of one run has no measured noise: refused, not used.
	if err := run(ok, "", t.TempDir(), 0.10, true, []string{ok}); err == nil || !strings.Contains(err.Error(), "1 run of Login req/s") {
		t.Errorf("a baseline of one run: %v, want it refused", err)
	}
}
