package baseline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sealion.dev/matrix"
	"sealion.dev/matrix/kubeversions"
)

// old is a JSON report as written before cells had times, flaky verdicts or changes: a newer
// run must still read it.
const old = `{
  "started": "2026-11-20T17:00:00Z", "duration": 1380000000000,
  "groups": [
    {"distribution": "kubeadm", "version": {"minor": "1.33", "release": "v1.33.12"}, "status": "fail",
     "paths": [
       {"name": "webhook", "status": "pass"},
       {"name": "ldap", "status": "fail", "reason": "bind refused"},
       {"name": "dex-browser", "status": "pass"},
       {"name": "github", "status": "flaky"},
       {"name": "ad", "status": "not run"}
     ]}
  ]
}`

func TestMark(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	base, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	v := kubeversions.Version{Minor: "1.33", Release: "v1.33.13"} // a newer patch: the same cells
	cell := func(name string, s matrix.Status) matrix.PathResult {
		return matrix.PathResult{Name: name, Outcome: matrix.Outcome{Status: s}}
	}
	r := matrix.Results{Groups: []matrix.GroupResult{
		{Distribution: "kubeadm", Version: v, Paths: []matrix.PathResult{
			cell("webhook", matrix.Fail), cell("ldap", matrix.Pass), cell("dex-browser", matrix.Pass),
			cell("github", matrix.Error), cell("ad", matrix.Pass), cell("supervisor", matrix.Pass),
		}},
		{Distribution: "gke", Version: v, Paths: []matrix.PathResult{cell("webhook", matrix.Fail)}},
	}}
	Mark(&r, base, "old/results.json")
	want := []matrix.Change{matrix.Regression, matrix.Fixed, "", matrix.Regression, "", matrix.NewPass}
	for i, p := range r.Groups[0].Paths {
		if p.Change != want[i] {
			t.Errorf("%s: %q, want %q", p.Name, p.Change, want[i])
		}
	}
	if c := r.Groups[1].Paths[0].Change; c != "" || r.Baseline != "old/results.json" {
		t.Errorf("a new cell that fails is no change (%q); baseline %q", c, r.Baseline)
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notReport := filepath.Join(dir, "junit.xml")
	if err := os.WriteFile(notReport, []byte("<testsuites/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.json"), notReport, empty} {
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Load(%s) = %v, want an error naming the file", path, err)
		}
	}
}
