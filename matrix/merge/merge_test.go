package merge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sealion.dev/matrix"
	"sealion.dev/matrix/hostcheck"
	"sealion.dev/matrix/kubeversions"
	"sealion.dev/matrix/report"
	"sealion.dev/matrix/run"
)

// testCatalog has groups that run (kubeadm, gke), one that cannot run here (kubeadm on 1.38, whose
// kubelet this host's containerd 1.6 cannot serve), ones not built (kind has no provider in
// the plan, ldap no tests) and ones missing an environment variable (eks).
const testCatalog = `package: sealion.dev/e2e/conformance
suite: [TestInstalled]
strategies: []
distributions:
- {name: kubeadm, onHost: true, needs: [binaries]}
- {name: kind, needs: [binaries]}
- {name: gke, needs: [binaries]}
- {name: eks, env: [SEALION_TEST_EKS_TOKEN]}
paths:
- {name: webhook, tests: [TestCLIStaticLogin]}
- {name: ldap}
- {name: faults, tests: [TestFaultConciergePodDeleted], distributions: [kubeadm]}
artifacts:
- {name: binaries, dir: ., command: [sh, -c, 'echo "built {{.Release}}"']}
`

// fakeGo replays go test -json for the tests the -run expression names: each passes, but
// TestCLIStaticLogin fails on gke 1.34; and it writes a log file as the real suite does.
const fakeGo = `#!/bin/sh
for last; do :; done
mkdir -p "$SEALION_E2E_LOGS/sealion-e2e-$SEALION_E2E_PROVIDER"
echo "events of $SEALION_E2E_PROVIDER" > "$SEALION_E2E_LOGS/sealion-e2e-$SEALION_E2E_PROVIDER/events.txt"
for t in $(echo "$last" | tr -d '^$()' | tr '|' ' '); do
	result=pass
	if [ "$SEALION_E2E_PROVIDER $SEALION_E2E_KUBE_VERSION $t" = "gke v1.34.1 TestCLIStaticLogin" ]; then result=fail; fi
	printf '{"Action":"run","Package":"sealion.dev/e2e/conformance","Test":"%s"}\n' "$t"
	printf '{"Action":"output","Package":"sealion.dev/e2e/conformance","Test":"%s","Output":"--- %s: %s\\n"}\n' "$t" "$result" "$t"
	printf '{"Action":"%s","Package":"sealion.dev/e2e/conformance","Test":"%s","Elapsed":1.5}\n' "$result" "$t"
done
`

// TestShardsMergedEqualOneRun runs a plan whole, then as 2 and as 3 shards, each shard in its
// own report folder as on its own machine, merges the shards and compares: the same results
// (but for times), the same Markdown, every planned cell once, and every log the results name
// present in the merged folder.
func TestShardsMergedEqualOneRun(t *testing.T) {
	// Not parallel: it writes a program and runs it, and a fork by a parallel test can hold the
	// file open for writing meanwhile ("text file busy", golang/go#22315).
	cat, err := matrix.ParseCatalog([]byte(testCatalog))
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	goCmd := filepath.Join(repo, "fake-go")
	if err := os.WriteFile(goCmd, []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	var versions []kubeversions.Version
	for _, m := range []string{"1.33", "1.34", "1.38"} {
		versions = append(versions, kubeversions.Version{Minor: m, Release: "v" + m + ".1"})
	}
	groups, err := cat.Plan(matrix.PlanOptions{Versions: versions, Providers: []string{"kubeadm", "gke", "eks"},
		Host: hostcheck.Host{Containerd: "1.6.20"}, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	runInto := func(out string, groups []matrix.Group) matrix.Results {
		r := &run.Runner{Catalog: cat, Repo: repo, Out: out, Cache: "/cache", GoCommand: goCmd}
		res := r.Run(context.Background(), groups, nil)
		res.Host, res.Commit = "test host", "abc1234"
		return res
	}

	whole := runInto(t.TempDir(), groups)
	statuses := map[matrix.Status]bool{}
	for _, g := range whole.Groups {
		statuses[g.Status] = true
	}
	for _, s := range []matrix.Status{matrix.Pass, matrix.Fail, matrix.CannotRun, matrix.NotBuilt, matrix.NotRun} {
		if !statuses[s] {
			t.Fatalf("no group of the plan is %s: the test proves less than it says (%v)", s, statuses)
		}
	}

	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d shards", n), func(t *testing.T) {
			root := t.TempDir()
			var dirs []string
			for i := 1; i <= n; i++ {
				dir := filepath.Join(root, fmt.Sprintf("shard-%d", i))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				s := matrix.Shard{Index: i, Count: n}
				res := runInto(dir, s.Select(cat, groups))
				res.Shard, res.Plan = &s, matrix.CellNames(groups)
				if err := report.WriteAll(dir, res); err != nil {
					t.Fatal(err)
				}
				dirs = append(dirs, dir)
			}
			out := filepath.Join(root, "merged")
			merged, err := Merge(out, dirs, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if merged.Failed() != whole.Failed() || !merged.Failed() {
				t.Errorf("merged failed %v, whole %v; want both true", merged.Failed(), whole.Failed())
			}
			if got, want := render(t, report.JSON, merged), render(t, report.JSON, whole); got != want {
				t.Errorf("merged results differ from one run's:\n%s\nwant\n%s", got, want)
			}
			if got, want := render(t, report.Markdown, merged), render(t, report.Markdown, whole); got != want {
				t.Errorf("merged Markdown differs from one run's:\n%s\nwant\n%s", got, want)
			}
			var cells []string
			for _, g := range merged.Groups {
				for _, p := range g.Paths {
					cells = append(cells, g.Name()+"/"+p.Name)
				}
			}
			if want := matrix.CellNames(groups); !slices.Equal(cells, want) {
				t.Errorf("merged cells %v, want each of %v once", cells, want)
			}
			for _, f := range logsNamed(merged) {
				if _, err := os.Stat(filepath.Join(out, f)); err != nil {
					t.Errorf("the merged results name %s: %v", f, err)
				}
			}
		})
	}
}

// render writes normalised results: run-specific times zeroed.
func render(t *testing.T, write func(io.Writer, matrix.Results) error, r matrix.Results) string {
	t.Helper()
	var b bytes.Buffer
	r.Started, r.Duration = time.Time{}, 0
	r.Groups = slices.Clone(r.Groups)
	for i := range r.Groups {
		r.Groups[i].Started, r.Groups[i].Duration = time.Time{}, 0
	}
	if err := write(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func logsNamed(r matrix.Results) []string {
	var out []string
	for _, g := range r.Groups {
		out = append(out, g.Files...)
		for _, p := range g.Paths {
			for _, t := range p.Tests {
				if t.Log != "" {
					out = append(out, t.Log)
				}
			}
		}
	}
	return out
}

// shardResults are hand-written results of shard i of n of a plan of two groups, a/1.33 and b/1.33.
func shardResults(i, n int, commit string, groups ...string) matrix.Results {
	s := matrix.Shard{Index: i, Count: n}
	r := matrix.Results{Started: time.Date(2026, 11, 27, 10, i, 0, 0, time.UTC), Duration: time.Duration(i) * time.Minute,
		Commit: commit, Host: "host", Shard: &s, Plan: []string{"a/1.33/webhook", "b/1.33/webhook"}}
	for _, g := range groups {
		r.Groups = append(r.Groups, matrix.GroupResult{Distribution: g, Version: kubeversions.Version{Minor: "1.33", Release: "v1.33.1"},
			Outcome: matrix.Outcome{Status: matrix.Pass}, Paths: []matrix.PathResult{{Name: "webhook", Outcome: matrix.Outcome{Status: matrix.Pass}}}})
	}
	return r
}

func writeShard(t *testing.T, dir string, r matrix.Results, files map[string]string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, report.JSONFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, report.JSONFile)
}

// Shards that are not every shard of one plan at one commit, each cell once, are refused, and
// the error says which files and which cell.
func TestMergeRefuses(t *testing.T) {
	t.Parallel()
	other := shardResults(2, 2, "abc1234", "b")
	other.Plan = []string{"a/1.33/webhook", "c/1.33/webhook"}
	newer := shardResults(2, 2, "abc1234", "b")
	newer.Groups[0].Version.Release = "v1.33.2"
	plain := shardResults(1, 1, "abc1234", "a", "b")
	plain.Shard = nil
	for _, tc := range []struct {
		name    string
		results []matrix.Results
		want    string
	}{
		{"commits", []matrix.Results{shardResults(1, 2, "abc1234", "a"), shardResults(2, 2, "def5678", "b")},
			"s0/results.json ran at commit abc1234, DIR/s1/results.json at def5678: shards of different checkouts do not merge"},
		{"split", []matrix.Results{shardResults(1, 2, "abc1234", "a"), shardResults(2, 3, "abc1234", "b")},
			"s0/results.json is shard 1/2, DIR/s1/results.json shard 2/3"},
		{"plans", []matrix.Results{shardResults(1, 2, "abc1234", "a"), other},
			"planned different cells (--cells, catalog or Kubernetes minors differ): b/1.33/webhook only in the first"},
		{"duplicate", []matrix.Results{shardResults(1, 2, "abc1234", "a"), shardResults(2, 2, "abc1234", "a", "b")},
			"cell a/1.33/webhook is in both DIR/s0/results.json and DIR/s1/results.json"},
		{"same shard twice", []matrix.Results{shardResults(1, 2, "abc1234", "a"), shardResults(1, 2, "abc1234", "a")},
			"cell a/1.33/webhook is in both DIR/s0/results.json and DIR/s1/results.json"},
		{"missing", []matrix.Results{shardResults(1, 2, "abc1234", "a")},
			"no shard reports 1 planned cells (b/1.33/webhook); missing shards: 2/2"},
		{"releases", []matrix.Results{shardResults(1, 2, "abc1234", "a"), newer},
			"Kubernetes 1.33 is v1.33.1 in DIR/s0/results.json and v1.33.2 in DIR/s1/results.json"},
		{"not a shard", []matrix.Results{plain}, "s0/results.json is not a shard's results (matrix --shard i/n writes them)"},
	} {
		dir := t.TempDir()
		var files []string
		for i, r := range tc.results {
			files = append(files, writeShard(t, filepath.Join(dir, fmt.Sprintf("s%d", i)), r, nil))
		}
		_, err := Merge(filepath.Join(dir, "merged"), files, io.Discard)
		if want := strings.ReplaceAll(tc.want, "DIR", dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", tc.name, err, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "merged")); err == nil {
			t.Errorf("%s: the merged folder was made though the merge was refused", tc.name)
		}
	}

	dir := t.TempDir()
	shard := filepath.Join(dir, "s0")
	writeShard(t, shard, shardResults(1, 1, "abc1234", "a", "b"), nil)
	if _, err := Merge(filepath.Join(shard, "merged"), []string{shard}, io.Discard); err == nil || !strings.Contains(err.Error(), "is inside the shard folder") {
		t.Errorf("out inside a shard: %v", err)
	}
}

// A build log both shards wrote, with different content, is kept twice, and the results of the
// second shard name its copy.
func TestMergeKeepsBothLogsOfAnArtifact(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	one, two := shardResults(1, 2, "abc1234", "a"), shardResults(2, 2, "abc1234", "b")
	one.Groups[0].Files = []string{"cells/a/1.33/output.log"}
	two.Groups[0].Outcome = matrix.Outcome{Status: matrix.Error, Reason: "building binaries failed: exit status 1 (log: prepare/binaries-v1.33.1.log)"}
	f1 := writeShard(t, filepath.Join(dir, "s1"), one, map[string]string{"prepare/binaries-v1.33.1.log": "built",
		"prepare/same.log": "x", "cells/a/1.33/output.log": "a"})
	f2 := writeShard(t, filepath.Join(dir, "s2"), two, map[string]string{"prepare/binaries-v1.33.1.log": "no compiler", "prepare/same.log": "x"})
	out := filepath.Join(dir, "merged")
	var warn bytes.Buffer
	res, err := Merge(out, []string{f2, f1}, &warn)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	_ = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(out, p)
			got[filepath.ToSlash(rel)] = string(data)
		}
		return nil
	})
	// Shard 1 keeps the name, though given second.
	want := map[string]string{"prepare/binaries-v1.33.1.log": "built", "prepare/binaries-v1.33.1.shard-2.log": "no compiler",
		"prepare/same.log": "x", "cells/a/1.33/output.log": "a"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("merged folder %v, want %v", got, want)
	}
	if res.Groups[0].Name() != "a/1.33" || res.Groups[1].Reason != "building binaries failed: exit status 1 (log: prepare/binaries-v1.33.1.shard-2.log)" {
		t.Errorf("groups %+v", res.Groups)
	}
	if !strings.Contains(warn.String(), "both have prepare/binaries-v1.33.1.log; the second is kept as prepare/binaries-v1.33.1.shard-2.log") {
		t.Errorf("warning %q", warn.String())
	}
	// Shard 1 ran 10:01-10:02, shard 2 10:02-10:04.
	if !res.Started.Equal(one.Started) || res.Duration != 3*time.Minute || res.Host != "host" || res.Commit != "abc1234" {
		t.Errorf("run %v %v %q %q; want from the first start to the last end", res.Started, res.Duration, res.Host, res.Commit)
	}
}
