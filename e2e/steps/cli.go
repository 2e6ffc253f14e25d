package steps

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

var cli struct {
	once sync.Once
	path string
	err  error
}

// PinnipedCLI builds the pinniped command from this checkout, once per test binary, and returns
// its path. Suites test the CLI users run, not a library call standing in for it.
func PinnipedCLI(ctx context.Context) (string, error) {
	cli.once.Do(func() {
		dir := RepoPath("_output/e2e/bin")
		if cli.err = os.MkdirAll(dir, 0o755); cli.err != nil {
			return
		}
		cli.path = filepath.Join(dir, "pinniped")
		// Test binaries of several packages build it at once: each writes its own file and
		// renames it into place, so none runs a half-written one.
		tmp := fmt.Sprintf("%s.%d.tmp", cli.path, os.Getpid())
		cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp, "./cli/cmd/pinniped")
		cmd.Dir = RepoPath(".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			cli.err = fmt.Errorf("building the pinniped CLI: %w: %s", err, out)
			return
		}
		cli.err = os.Rename(tmp, cli.path)
	})
	return cli.path, cli.err
}
