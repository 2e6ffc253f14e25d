package testdeps

import (
	"errors"
	"runtime"
	"testing"
)

// recorder is a testing.TB that records how a test was stopped; it stops its goroutine as
// testing.T does.
type recorder struct {
	testing.TB
	failed, skipped bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }
func (r *recorder) Skipf(string, ...any)  { r.skipped = true; runtime.Goexit() }

func TestRequire(t *testing.T) {
	missing := errors.New("slapd is not installed")
	for _, tc := range []struct {
		name               string
		ci                 string
		err                error
		wantFail, wantSkip bool
	}{
		{name: "present, in CI", ci: "true", err: nil},
		{name: "present, on a developer's machine", ci: "", err: nil},
		{name: "missing in CI fails", ci: "true", err: missing, wantFail: true},
		{name: "missing on a developer's machine skips", ci: "", err: missing, wantSkip: true},
		{name: "CI must say true", ci: "1", err: missing, wantSkip: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				Require(r, tc.err)
			}()
			<-done
			if r.failed != tc.wantFail || r.skipped != tc.wantSkip {
				t.Errorf("failed=%v skipped=%v, want failed=%v skipped=%v", r.failed, r.skipped, tc.wantFail, tc.wantSkip)
			}
		})
	}
}
