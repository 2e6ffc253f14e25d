// Package serverbuild builds our programs for integration tests as a release builds them.
package serverbuild

import (
	"fmt"
	"os"
	"os/exec"
)

// Version is the version the builds are stamped with: a release's, not the unstamped v0.0.0 of
// a plain go build, because libraries read it. The generic API server once took it as the
// Kubernetes version to emulate and refused to start; an unstamped build hid that.
const Version = "v0.1.0-integration"

// Build builds the main package pkg into the file out, statically linked and stamped with
// Version as tools/release stamps a release.
func Build(pkg, out string) error {
	cmd := exec.Command("go", "build", "-o", out,
		"-ldflags", "-X k8s.io/component-base/version.gitVersion="+Version+" -X k8s.io/component-base/version.gitMajor=0 -X k8s.io/component-base/version.gitMinor=1",
		pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return nil
}
