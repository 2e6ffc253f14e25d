package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMakeBuildStampsVersion runs the command `make build` builds the CLI with (as `make -n`
// prints it) and checks that `pinniped version` shows the checkout's `git describe`, commit and
// the build's date: the -ldflags -X names must be the variables the version command reads, or the
// linker drops them without a word. Builds the binary, so it is skipped under -short.
func TestMakeBuildStampsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI; skipped under -short")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	output := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}

	planned := output("make", "-n", "-s", "--no-print-directory", "build", "BIN="+bin)
	var build string
	for _, line := range strings.Split(planned, "\n") {
		if strings.HasSuffix(line, " ./cli/cmd/pinniped") {
			build = line
		}
	}
	if build == "" {
		t.Fatalf("make build does not build ./cli/cmd/pinniped:\n%s", planned)
	}
	started := time.Now().UTC().Truncate(time.Second)
	cmd := exec.Command("bash", "-c", build)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}

	var info struct{ GitVersion, GitCommit, BuildDate string }
	if err := json.Unmarshal([]byte(output(filepath.Join(bin, "pinniped"), "version", "-o", "json")), &info); err != nil {
		t.Fatal(err)
	}
	if want := output("git", "describe", "--tags", "--always", "--dirty"); info.GitVersion != want {
		t.Errorf("gitVersion %q, want %q", info.GitVersion, want)
	}
	if want := output("git", "rev-parse", "HEAD"); info.GitCommit != want {
		t.Errorf("gitCommit %q, want %q", info.GitCommit, want)
	}
	built, err := time.Parse(time.RFC3339, info.BuildDate)
	if err != nil || built.Before(started.Add(-time.Minute)) {
		t.Errorf("buildDate %q is not the time of this build (%s)", info.BuildDate, started.Format(time.RFC3339))
	}
}
