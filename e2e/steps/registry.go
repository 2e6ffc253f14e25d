package steps

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// StartRegistry builds and starts tools/images registry on loopback, which containerd on this
// machine pulls from over plain HTTP (as it does from any loopback registry), and returns its
// address; it stops when the test ends. It stands in for the registry a cloud's nodes pull from.
func StartRegistry(ctx context.Context, t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "images")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./images")
	build.Dir = RepoPath("tools")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building tools/images: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, bin, "registry", "--listen", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the registry printed no address: %v", err)
	}
	return strings.TrimSpace(addr)
}
