package cloudproof

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"sealion.dev/e2e/steps"
)

const report = `{"Action":"start","Package":"sealion.dev/e2e/conformance"}
{"Action":"run","Package":"sealion.dev/e2e/conformance","Test":"TestInstalled"}
{"Action":"output","Package":"sealion.dev/e2e/conformance","Test":"TestInstalled","Output":"=== RUN   TestInstalled\n"}
{"Action":"pass","Package":"sealion.dev/e2e/conformance","Test":"TestInstalled/the_Concierge_serves"}
{"Action":"pass","Package":"sealion.dev/e2e/conformance","Test":"TestInstalled"}
{"Action":"output","Package":"sealion.dev/e2e/conformance","Test":"TestSupervisorActiveDirectoryLogin/Active_Directory_through_the_Supervisor","Output":"    supervisor_test.go:160: cannot run here: Active Directory runs on the runner's host only\n"}
{"Action":"skip","Package":"sealion.dev/e2e/conformance","Test":"TestSupervisorActiveDirectoryLogin/Active_Directory_through_the_Supervisor"}
{"Action":"pass","Package":"sealion.dev/e2e/conformance","Test":"TestSupervisorActiveDirectoryLogin"}
{"Action":"skip","Package":"sealion.dev/e2e/conformance","Test":"TestCLIBrowserLogin/one_skipped"}
{"Action":"pass","Package":"sealion.dev/e2e/conformance","Test":"TestCLIBrowserLogin/one_passed"}
{"Action":"pass","Package":"sealion.dev/e2e/conformance","Test":"TestCLIBrowserLogin"}
{"Action":"skip","Package":"sealion.dev/e2e/conformance","Test":"TestCLIStaticLogin"}
{"Action":"fail","Package":"sealion.dev/e2e/conformance","Test":"TestImpersonationProxy/sub"}
{"Action":"fail","Package":"sealion.dev/e2e/conformance","Test":"TestImpersonationProxy"}
{"Action":"fail","Package":"sealion.dev/e2e/conformance"}
`

func TestReadAndCheckVerdicts(t *testing.T) {
	t.Parallel()
	var echo bytes.Buffer
	results, err := readVerdicts(strings.NewReader(report), &echo)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(echo.String(), "=== RUN   TestInstalled\n") {
		t.Errorf("output not echoed: %q", echo.String())
	}
	// A test whose subtests all skipped is a skip (as the suite skips); one with a subtest passed a pass.
	if results["TestInstalled"].action != "pass" || results["TestImpersonationProxy"].action != "fail" ||
		results["TestSupervisorActiveDirectoryLogin"].action != "skip" || results["TestCLIBrowserLogin"].action != "pass" ||
		!strings.Contains(results["TestSupervisorActiveDirectoryLogin"].skipReason, steps.ActiveDirectoryHostOnly) || len(results) != 5 {
		t.Fatalf("verdicts %+v", results)
	}

	ad := map[string]string{"TestSupervisorActiveDirectoryLogin": steps.ActiveDirectoryHostOnly}
	if err := checkVerdicts(results, []string{"TestInstalled", "TestSupervisorActiveDirectoryLogin"}, []string{"TestInstalled"}, ad); err != nil {
		t.Errorf("a passing run refused: %v", err)
	}
	err = checkVerdicts(results, []string{"TestInstalled", "TestImpersonationProxy", "TestCLIStaticLogin", "TestMissing"},
		[]string{"TestCLIStaticLogin"}, map[string]string{"TestInstalled": steps.ActiveDirectoryHostOnly})
	for _, want := range []string{"TestImpersonationProxy failed", "TestMissing did not run",
		"TestCLIStaticLogin: skip, want pass", `TestInstalled: pass, want a skip saying "cannot run here`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %q in it", err, want)
		}
	}
	if _, err := readVerdicts(strings.NewReader("not json"), &echo); err == nil {
		t.Error("a broken report was accepted")
	}
}

func TestRunExpression(t *testing.T) {
	t.Parallel()
	if got := runExpression([]string{"TestA", "TestB.x"}); got != `^(TestA|TestB\.x)$` {
		t.Errorf("runExpression = %q", got)
	}
}

// TestSuiteNamesExist keeps the proof's test names in step with the conformance suite: go test
// -run would otherwise run nothing of a renamed test.
func TestSuiteNamesExist(t *testing.T) {
	t.Parallel()
	defined := map[string]bool{}
	files, err := filepath.Glob(steps.RepoPath("e2e/conformance/*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("conformance files: %v, %v", files, err)
	}
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range parsed.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
				defined[fn.Name.Name] = true
			}
		}
	}
	for _, name := range append(suite, mustPass...) {
		if !defined[name] {
			t.Errorf("%s is not a test of e2e/conformance", name)
		}
	}
}

// TestRequirementsAreRun: every test the proof requires to pass or to skip is one it runs, since
// checkVerdicts can hold only those to their verdict (a required test left out of the run would
// pass the proof unseen), and none is required both to pass and to skip.
func TestRequirementsAreRun(t *testing.T) {
	t.Parallel()
	ran := map[string]bool{}
	for _, name := range suite {
		ran[name] = true
	}
	for _, name := range mustPass {
		if !ran[name] || mustSkip[name] != "" {
			t.Errorf("%s must pass: run %v, required to skip %q", name, ran[name], mustSkip[name])
		}
	}
	for name, reason := range mustSkip {
		if !ran[name] || !strings.HasPrefix(reason, "cannot run here: ") {
			t.Errorf("%s must skip saying %q: run %v, want a reason starting \"cannot run here: \"", name, reason, ran[name])
		}
	}
}
