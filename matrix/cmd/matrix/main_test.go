package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sealion.dev/core/testing/testdeps"
	"sealion.dev/matrix"
	"sealion.dev/matrix/ciworkflow"
	"sealion.dev/matrix/kubeversions"
	"sealion.dev/matrix/report"
	"sealion.dev/providers/all"
)

// TestMain calls all.Main as every test package linking the providers must, though none of its
// tests creates a cluster.
func TestMain(m *testing.M) {
	all.Main()
	os.Exit(m.Run())
}

// Usage errors are caught before anything is resolved or run.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cells", "kubeadm/1.33/webhook/extra"}, "more than distribution/version/path"},
		{[]string{"--cells", "kubeadm/{1.33"}, "unbalanced braces"},
		{[]string{"kubeadm/1.33"}, "cells go in --cells"},
		{[]string{"--shard", "0/3"}, `shard "0/3" is out of range`},
		{[]string{"--shard", "4/3"}, `shard "4/3" is out of range`},
		{[]string{"--list", "--shard", "x"}, `shard "x" is not i/n`},
		{[]string{"--baseline", "/nonexistent/old/results.json"}, "/nonexistent/old/results.json"},
	} {
		code, err := matrixMain(tc.args, io.Discard, io.Discard)
		if code != 2 || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: code %d, err %v; want 2 and %q", tc.args, code, err, tc.want)
		}
	}
	if code, _ := matrixMain([]string{"--no-such-flag"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("unknown flag: code %d", code)
	}
}

// matrix merge writes the merged report and exits as the whole run would: 1 when a cell failed.
func TestMerge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := []string{"kubeadm/1.33/webhook", "gke/1.33/webhook"}
	var shards []string
	for i, status := range []matrix.Status{matrix.Pass, matrix.Fail} {
		s := matrix.Shard{Index: i + 1, Count: 2}
		res := matrix.Results{Commit: "abc1234", Shard: &s, Plan: plan, Groups: []matrix.GroupResult{{
			Distribution: strings.Split(plan[i], "/")[0], Version: kubeversions.Version{Minor: "1.33", Release: "v1.33.1"},
			Outcome: matrix.Outcome{Status: status}, Paths: []matrix.PathResult{{Name: "webhook", Outcome: matrix.Outcome{Status: status}}},
		}}}
		shard := filepath.Join(dir, fmt.Sprintf("shard-%d", i+1))
		if err := os.MkdirAll(shard, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := report.WriteAll(shard, res); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, shard)
	}
	out := filepath.Join(dir, "merged")
	var stdout bytes.Buffer
	code, err := matrixMain(append([]string{"merge", "--out", out}, shards...), &stdout, io.Discard)
	md, _ := os.ReadFile(filepath.Join(out, report.MarkdownFile))
	if code != 1 || err == nil || stdout.String() != string(md) || !strings.Contains(string(md), "| kubeadm |") || !strings.Contains(string(md), "| gke |") {
		t.Errorf("code %d, err %v, stdout:\n%s\nreport.md:\n%s", code, err, stdout.String(), md)
	}
	for _, f := range []string{report.JSONFile, report.MarkdownFile, report.HTMLFile, report.JUnitFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if code, err := matrixMain([]string{"merge", "--out", out, shards[0]}, io.Discard, io.Discard); code != 2 || err == nil ||
		!strings.Contains(err.Error(), "missing shards: 2/2") {
		t.Errorf("one shard of two: code %d, err %v", code, err)
	}
	if code, err := matrixMain([]string{"merge"}, io.Discard, io.Discard); code != 2 || err == nil {
		t.Errorf("no shards: code %d, err %v", code, err)
	}
}

// matrix ci-workflow writes the workflow for the shards asked for, and refuses a count below one.
func TestCIWorkflow(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "workflows", "matrix.yml")
	if code, err := matrixMain([]string{"ci-workflow", "--shards", "3", "--out", file}, io.Discard, io.Discard); code != 0 || err != nil {
		t.Fatalf("code %d, err %v", code, err)
	}
	got, _ := os.ReadFile(file)
	want, err := ciworkflow.Render(3)
	if err != nil || string(got) != string(want) {
		t.Errorf("wrote\n%s\nwant\n%s (%v)", got, want, err)
	}
	if code, err := matrixMain([]string{"ci-workflow", "--shards", "0", "--out", file}, io.Discard, io.Discard); code != 2 || err == nil {
		t.Errorf("0 shards: code %d, err %v", code, err)
	}
}

// --list --shard i/n lists the shard's slice, the slices together the whole plan; --releases
// prints the Kubernetes releases of the groups, oldest first: the key of CI's cache of Kubernetes builds.
func TestShardListAndReleases(t *testing.T) {
	// Not parallel: it sets SEALION_CACHE, where the matrix finds the versions it resolved today.
	cache := t.TempDir()
	t.Setenv("SEALION_CACHE", cache)
	versions := fmt.Sprintf(`{"fetched": %q, "versions": ["v1.32.2", "v1.33.13", "v1.34.4", "v1.34.3"]}`, time.Now().UTC().Format(time.RFC3339))
	if err := os.MkdirAll(filepath.Join(cache, "matrix"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "matrix", "kubernetes-versions.json"), []byte(versions), 0o644); err != nil {
		t.Fatal(err)
	}
	cells := func(args ...string) (header string, cells []string) {
		var out bytes.Buffer
		if code, err := matrixMain(append([]string{"--list"}, args...), &out, io.Discard); code != 0 || err != nil {
			t.Fatalf("%v: code %d, err %v", args, code, err)
		}
		lines := strings.Split(out.String(), "\n")
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 0 && strings.Count(f[0], "/") == 2 {
				cells = append(cells, f[0])
			}
		}
		return lines[0], cells
	}
	// 19 groups: six distributions on three minors, and existing; two shards split them by minor.
	_, whole := cells()
	h1, one := cells("--shard", "1/2")
	h2, two := cells("--shard", "2/2")
	if h1 != "shard 1/2: 12 of the plan's 19 groups" || h2 != "shard 2/2: 7 of the plan's 19 groups" || len(one) == 0 || len(two) == 0 {
		t.Errorf("headers %q, %q; %d and %d cells", h1, h2, len(one), len(two))
	}
	if union := slices.Sorted(slices.Values(append(one, two...))); !slices.Equal(union, slices.Sorted(slices.Values(whole))) {
		t.Errorf("shards list %v, the plan %v", union, whole)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--releases"}, "v1.32.2 v1.33.13 v1.34.4\n"},
		{[]string{"--releases", "--cells", "kubeadm/1.34,kind/1.33,existing"}, "v1.33.13 v1.34.4\n"},
		{[]string{"--releases", "--cells", "existing"}, "\n"},
		// Each shard builds only its own minors.
		{[]string{"--releases", "--shard", "1/2"}, "v1.32.2 v1.34.4\n"},
		{[]string{"--releases", "--shard", "2/2"}, "v1.33.13\n"},
	} {
		var out bytes.Buffer
		if code, err := matrixMain(tc.args, &out, io.Discard); code != 0 || err != nil || out.String() != tc.want {
			t.Errorf("%v: code %d, err %v, printed %q, want %q", tc.args, code, err, out.String(), tc.want)
		}
	}
}

// Colour only on a terminal, and never with NO_COLOR set.
func TestColorTerminal(t *testing.T) {
	t.Parallel()
	tty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	testdeps.Require(t, err)
	defer tty.Close()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	env := func(noColor string) func(string) string {
		return func(k string) string { return map[string]string{"NO_COLOR": noColor}[k] }
	}
	if !colorTerminal(tty, env("")) || colorTerminal(tty, env("1")) || colorTerminal(devNull, env("")) || colorTerminal(io.Discard, env("")) {
		t.Error("colour on a terminal without NO_COLOR only")
	}
}

func TestInterruptedStatus(t *testing.T) {
	// As a shell reports a command a signal ended, so make stops after an interrupted matrix.
	for sig, want := range map[os.Signal]int{os.Interrupt: 130, syscall.SIGTERM: 143} {
		if got := interruptedStatus(sig); got != want {
			t.Errorf("interruptedStatus(%v) = %d, want %d", sig, got, want)
		}
	}
}
