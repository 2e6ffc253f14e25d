package testjson

import (
	"os"
	"strings"
	"testing"
)

// The testdata files are real `go test -json` output of a small package: suite.json has a passing
// test with one skipped subtest, a test whose only leaf skipped, a failing test and a test that
// skipped itself; setupfail.json a TestMain that failed before any test; timeout.json a test that
// hit -timeout.
func parseFile(t *testing.T, name string) *Report {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestOutcomes(t *testing.T) {
	t.Parallel()
	rep := parseFile(t, "suite.json")
	p := rep.Package("sample")
	if p == nil || p.Result != Fail || len(p.Tests) != 4 {
		t.Fatalf("package %+v", p)
	}
	for _, tc := range []struct {
		test       string
		want       Result
		wantReason string
	}{
		{"TestPasses", Pass, ""},
		{"TestAllSkipped", Skip, "this cluster runs no kube-controller-manager pod"},
		{"TestFails", Fail, "first kubectl: exit status 1\nerror: forbidden"},
		{"TestSkippedItself", Skip, "the benchmark runs only with SEALION_E2E_BENCH=true"},
	} {
		test := rep.Test("sample", tc.test)
		if test == nil {
			t.Errorf("%s: not found", tc.test)
			continue
		}
		got, reason := test.Outcome()
		if got != tc.want || reason != tc.wantReason {
			t.Errorf("%s: Outcome() = %s, %q; want %s, %q", tc.test, got, reason, tc.want, tc.wantReason)
		}
	}
	// go test itself calls TestAllSkipped passed: only Outcome looks below.
	if r := rep.Test("sample", "TestAllSkipped").Result; r != Pass {
		t.Errorf("reported result %s, want pass", r)
	}
}

func TestOutputKeepsSubtestsInOrder(t *testing.T) {
	t.Parallel()
	out := strings.Join(parseFile(t, "suite.json").Test("sample", "TestPasses").AllOutput(), "\n")
	last := -1
	for _, want := range []string{"=== RUN   TestPasses\n", "=== RUN   TestPasses/feature/assess_one", "s_test.go:7: all good",
		"s_test.go:8: not here", "--- PASS: TestPasses/feature ", "--- PASS: TestPasses "} {
		j := strings.Index(out, want)
		if j <= last {
			t.Fatalf("%q missing or out of order:\n%s", want, out)
		}
		last = j
	}
	if strings.Contains(out, "TestAllSkipped") {
		t.Errorf("another test's output leaked in:\n%s", out)
	}
}

func TestSetupFailureHasNoTests(t *testing.T) {
	t.Parallel()
	p := parseFile(t, "setupfail.json").Package("sample")
	if p.Result != Fail || len(p.Tests) != 0 {
		t.Fatalf("package %+v", p)
	}
	if !strings.Contains(strings.Join(p.Output, "\n"), "setup failure: creating cluster") {
		t.Errorf("package output %q lacks TestMain's error", p.Output)
	}
}

func TestTimeoutLeavesTestRunning(t *testing.T) {
	t.Parallel()
	rep := parseFile(t, "timeout.json")
	got, reason := rep.Test("sample", "TestHangs").Outcome()
	if got != Running || !strings.Contains(reason, "panic: test timed out after 2s") {
		t.Errorf("Outcome() = %s, %q", got, reason)
	}
}

func TestNonJSONLines(t *testing.T) {
	t.Parallel()
	rep, err := Parse(strings.NewReader("go: downloading example.com/x v1.0.0\n" +
		`{"Action":"build-output","ImportPath":"sealion.dev/e2e/conformance [sealion.dev/e2e/conformance.test]","Output":"x.go:1: undefined: y\n"}` + "\n" +
		`{"Action":"build-fail","Package":"sealion.dev/e2e/conformance"}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Package(""); p == nil || len(p.Output) != 2 || p.Output[0] != "go: downloading example.com/x v1.0.0" {
		t.Errorf("package-less output: %+v", p)
	}
	if p := rep.Package("sealion.dev/e2e/conformance"); p == nil || !p.BuildFailed || p.Result != Fail {
		t.Errorf("build failure not recorded: %+v", p)
	}
}

func TestCutFileLine(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"cli_test.go:68: Dex runs on this machine": "Dex runs on this machine",
		"error: forbidden: no":                     "error: forbidden: no",
		"see main.go:3: for details":               "see main.go:3: for details",
	} {
		if got := cutFileLine(in); got != want {
			t.Errorf("cutFileLine(%q) = %q, want %q", in, got, want)
		}
	}
}
