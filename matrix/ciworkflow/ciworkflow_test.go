package ciworkflow

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The committed workflow is what `matrix ci-workflow` writes, so that it cannot drift from the
// matrix's commands: regenerate it with `go run ./matrix/cmd/matrix ci-workflow`.
func TestCommittedWorkflowIsGenerated(t *testing.T) {
	t.Parallel()
	committed, err := os.ReadFile(filepath.Join("..", "..", File))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Render(DefaultShards)
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != string(want) {
		t.Errorf("%s is not what `go run ./matrix/cmd/matrix ci-workflow` writes; run it. Want:\n%s", File, want)
	}
}

// The workflow, read back, has a job per shard, each running its own shard, and a merge job that
// waits for them all and runs even when one failed.
func TestWorkflowShape(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, DefaultShards, 7} {
		data, err := Render(n)
		if err != nil {
			t.Fatal(err)
		}
		var w Workflow
		if err := yaml.UnmarshalStrict(data, &w); err != nil {
			t.Fatalf("%d shards: %v\n%s", n, err, data)
		}
		shard, merge := w.Jobs["shard"], w.Jobs["merge"]
		if shard.Strategy == nil || len(shard.Strategy.Matrix["shard"]) != n || shard.Strategy.Matrix["shard"][n-1] != n || shard.Strategy.FailFast {
			t.Errorf("%d shards: job matrix %+v", n, shard.Strategy)
		}
		if !slices.Equal(merge.Needs, []string{"shard"}) || merge.If != "always()" {
			t.Errorf("%d shards: merge job needs %v, if %q", n, merge.Needs, merge.If)
		}
		var runs []string
		for _, s := range slices.Concat(shard.Steps, merge.Steps) {
			runs = append(runs, s.Uses+s.Run)
		}
		all := strings.Join(runs, "\n")
		for _, want := range []string{
			"actions/checkout@v4", "actions/setup-go@v5", "actions/cache@v4", "actions/upload-artifact@v4", "actions/download-artifact@v4",
			"make matrix ALLOW_HOST_CHANGES=true MATRIX_FLAGS='--shard ${{ matrix.shard }}/" + strconv.Itoa(n) + " --out _output/matrix/shard-${{ matrix.shard }}'",
			"go run ./matrix/cmd/matrix merge --out _output/matrix/merged _output/matrix/shards/matrix-shard-*",
		} {
			if !strings.Contains(all, want) {
				t.Errorf("%d shards: no step %q in\n%s", n, want, all)
			}
		}
		if _, ok := w.On["pull_request"]; !ok || len(w.On) != 3 {
			t.Errorf("%d shards: triggers %v", n, w.On)
		}
	}
	if _, err := Render(0); err == nil {
		t.Error("0 shards: no error")
	}
}
