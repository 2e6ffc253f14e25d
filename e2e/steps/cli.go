package steps

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// PinnipedCLI returns the path of the release's pinniped command for this machine, the binary
// users download. Suites test the CLI users run, not a library call standing in for it.
func PinnipedCLI() (string, error) {
	if runtime.GOOS != "linux" {
		return "", fmt.Errorf("the e2e suites run on linux, not %s", runtime.GOOS)
	}
	path := filepath.Join(ReleaseDir(), "pinniped-cli-linux-"+runtime.GOARCH)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("the release's CLI is missing (make release-check makes it): %w", err)
	}
	return path, nil
}
