package run

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"sealion.dev/matrix"
	"sealion.dev/matrix/kubeversions"
	"sealion.dev/matrix/testjson"
)

// The progress line names a test whose every subtest skipped a skip, as the report counts it,
// though go test passed it; a test with a passing subtest stays a pass.
func TestProgressNamesSkippedFeatures(t *testing.T) {
	var out bytes.Buffer
	g := matrix.Group{Distribution: matrix.Distribution{Name: "gke"}, Version: kubeversions.Version{Minor: "1.37"}}
	p := newProgress(&out, false, time.Now, time.Now(), 0, []matrix.Group{g})
	defer p.close()
	rep := &testjson.Report{}
	for _, e := range []testjson.Event{
		{Action: "run", Package: "e2e", Test: "TestSkipped"},
		{Action: "run", Package: "e2e", Test: "TestSkipped/feature"},
		{Action: "skip", Package: "e2e", Test: "TestSkipped/feature"},
		{Action: "pass", Package: "e2e", Test: "TestSkipped"},
		{Action: "run", Package: "e2e", Test: "TestRan"},
		{Action: "run", Package: "e2e", Test: "TestRan/feature"},
		{Action: "pass", Package: "e2e", Test: "TestRan/feature"},
		{Action: "pass", Package: "e2e", Test: "TestRan", Elapsed: 1.5},
	} {
		rep.Add(e)
		if !strings.Contains(e.Test, "/") {
			p.testEvent(g, e, rep.Test(e.Package, e.Test))
		}
	}
	got := out.String()
	for _, want := range []string{"gke/1.37: TestSkipped skip (0s)", "gke/1.37: TestRan pass (1.5s)"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress lacks %q:\n%s", want, got)
		}
	}
}
