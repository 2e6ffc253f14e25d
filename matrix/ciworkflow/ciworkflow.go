// Package ciworkflow writes the GitHub Actions workflow that runs the conformance matrix across
// machines: a job matrix with one job per shard (matrix --shard i/n), each caching the
// Kubernetes builds of its releases, and a job that merges the shards' reports. GitHub Actions
// is the distributed engine; nothing of ours schedules across machines.
package ciworkflow

import (
	"fmt"
	"slices"

	"sigs.k8s.io/yaml"
)

// DefaultShards is how many machines the committed workflow spreads the matrix over: each of its
// shards then runs a handful of clusters, well inside a hosted runner's job time limit.
const DefaultShards = 4

// File is where the workflow lives, relative to the repository root.
const File = ".github/workflows/matrix.yml"

// Workflow is the part of GitHub Actions' workflow syntax the matrix uses.
type Workflow struct {
	Name        string             `json:"name"`
	On          map[string]Trigger `json:"on"`
	Permissions map[string]string  `json:"permissions,omitempty"`
	Jobs        map[string]Job     `json:"jobs"`
}

// Trigger is an event that starts the workflow; the matrix needs none of their filters.
type Trigger struct{}

// Job is one job: a machine and its steps.
type Job struct {
	Name     string    `json:"name,omitempty"`
	Needs    []string  `json:"needs,omitempty"`
	If       string    `json:"if,omitempty"`
	RunsOn   string    `json:"runs-on"`
	Strategy *Strategy `json:"strategy,omitempty"`
	Steps    []Step    `json:"steps"`
}

// Strategy is a job matrix: one job per value.
type Strategy struct {
	// FailFast false lets every shard finish when one fails, so the report has every cell.
	FailFast bool             `json:"fail-fast"`
	Matrix   map[string][]int `json:"matrix"`
}

// Step is an action (Uses, With) or a shell command (Run).
type Step struct {
	Name  string            `json:"name,omitempty"`
	ID    string            `json:"id,omitempty"`
	If    string            `json:"if,omitempty"`
	Uses  string            `json:"uses,omitempty"`
	With  map[string]string `json:"with,omitempty"`
	Shell string            `json:"shell,omitempty"`
	Run   string            `json:"run,omitempty"`
}

const (
	matrixCommand = "go run ./matrix/cmd/matrix"
	// cacheDir is the cache folder of the matrix and tools/kubebuild on a runner: SEALION_CACHE
	// is unset there, so both use the user cache folder, ~/.cache on Linux.
	cacheDir = "~/.cache/sealion"
	// shardArtifact prefixes the artifact of each shard's report folder.
	shardArtifact = "matrix-shard-"
)

// New is the workflow for n shards.
func New(n int) (Workflow, error) {
	if n < 1 {
		return Workflow{}, fmt.Errorf("%d shards: at least one is needed", n)
	}
	shards := make([]int, n)
	for i := range shards {
		shards[i] = i + 1
	}
	shard := fmt.Sprintf("${{ matrix.shard }}/%d", n)
	out := "_output/matrix/shard-${{ matrix.shard }}"
	setup := []Step{
		{Uses: "actions/checkout@v4"},
		{Uses: "actions/setup-go@v5", With: map[string]string{"go-version-file": "go.mod"}},
	}
	return Workflow{
		Name:        "conformance matrix",
		On:          map[string]Trigger{"push": {}, "pull_request": {}, "workflow_dispatch": {}},
		Permissions: map[string]string{"contents": "read"},
		Jobs: map[string]Job{
			"shard": {
				Name:     "shard " + shard,
				RunsOn:   "ubuntu-latest",
				Strategy: &Strategy{FailFast: false, Matrix: map[string][]int{"shard": shards}},
				Steps: slices.Concat(setup, []Step{
					Step{
						// The shard's Kubernetes releases key its cache: a new patch release makes
						// a new entry, starting from the last one (restore-keys). The version list
						// the matrix caches itself stays out, so the run uses the releases of the key.
						Name: "Kubernetes releases of this shard", ID: "releases", Shell: "bash",
						Run: fmt.Sprintf(`releases=$(%s --shard %s --releases) && echo "key=${releases// /-}" >> "$GITHUB_OUTPUT"`, matrixCommand, shard),
					},
					Step{
						Name: "Cache the Kubernetes builds", Uses: "actions/cache@v4",
						With: map[string]string{
							"path":         cacheDir + "\n!" + cacheDir + "/matrix\n",
							"key":          "sealion-kubernetes-${{ runner.os }}-${{ steps.releases.outputs.key }}",
							"restore-keys": "sealion-kubernetes-${{ runner.os }}-",
						},
					},
					Step{
						// Through make, which installs what the clusters and fixtures need on a
						// fresh runner (host packages, Chromium, slapd) before the matrix runs.
						Name: "Run shard " + shard,
						Run:  fmt.Sprintf("make matrix ALLOW_HOST_CHANGES=true MATRIX_FLAGS='--shard %s --out %s'", shard, out),
					},
					Step{
						Name: "Upload the shard's report", If: "always()", Uses: "actions/upload-artifact@v4",
						With: map[string]string{"name": shardArtifact + "${{ matrix.shard }}", "path": out},
					},
				}),
			},
			"merge": {
				Name:   "merged report",
				Needs:  []string{"shard"},
				If:     "always()",
				RunsOn: "ubuntu-latest",
				Steps: slices.Concat(setup, []Step{
					Step{
						Name: "Download the shards' reports", Uses: "actions/download-artifact@v4",
						With: map[string]string{"pattern": shardArtifact + "*", "path": "_output/matrix/shards"},
					},
					Step{
						// bash (with pipefail) so that the merge's exit status, not tee's, ends the step.
						Name: "Merge the shards' reports", Shell: "bash",
						Run: fmt.Sprintf(`%s merge --out _output/matrix/merged _output/matrix/shards/%s* | tee -a "$GITHUB_STEP_SUMMARY"`,
							matrixCommand, shardArtifact),
					},
					Step{
						Name: "Upload the merged report", If: "always()", Uses: "actions/upload-artifact@v4",
						With: map[string]string{"name": "matrix-report", "path": "_output/matrix/merged"},
					},
				}),
			},
		},
	}, nil
}

// Render is the workflow file for n shards.
func Render(n int) ([]byte, error) {
	w, err := New(n)
	if err != nil {
		return nil, err
	}
	body, err := yaml.Marshal(w)
	if err != nil {
		return nil, err
	}
	header := fmt.Sprintf("# The conformance matrix in %d shards, one runner each, and their merged report.\n"+
		"# Written by `%s ci-workflow --shards %d`: change that, not this file.\n", n, matrixCommand, n)
	return append([]byte(header), body...), nil
}
