package managed

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sealion.dev/providers"
)

// TestMain calls Main as every program linking the package must: TestIntegration's Create starts
// this test binary again as the cluster's supervisor.
func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

// TestCreateNeedsMain checks that a program that never called Main gets an error naming it, before
// anything else is checked or touched, instead of a supervisor that runs the program again.
// Not parallel: it clears what TestMain's call recorded, and parallel tests resume only once the
// sequential ones are done.
func TestCreateNeedsMain(t *testing.T) {
	mainCalled.Store(false)
	t.Cleanup(func() { mainCalled.Store(true) })
	root := t.TempDir()
	// Host changes are not allowed: were the check later in Create, that refusal would come first.
	p := &provider{profile: profiles[0], stateRoot: root, getenv: func(string) string { return "" }}
	err := p.Create(context.Background(), "demo", providers.CreateOptions{})
	var stepErr *providers.StepError
	if !errors.As(err, &stepErr) || !errors.Is(err, errNoMain) || !strings.Contains(err.Error(), "call managed.Main") {
		t.Fatalf("Create error = %v, want a StepError wrapping errNoMain", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) > 0 {
		t.Errorf("Create wrote %v before refusing", entries)
	}
}

// TestMainRunsTheSupervisor starts this test binary the way Create starts a supervisor, for a
// cluster whose state folder is empty: TestMain's call to Main must take over and report that the
// configuration cannot be read, which touches nothing on the host. -test.run=^$ keeps a copy
// that failed to take over from running the tests (and this one) again.
func TestMainRunsTheSupervisor(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cluster")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), supervisorEnv+"="+dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = []*os.File{w} // statusFD
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	step, err := waitForSupervisor(context.Background(), &supervisorProcess{cmd: cmd, status: r, log: "its output"})
	waitErr := cmd.Wait()
	if step != "read the cluster configuration" || err == nil || !strings.Contains(err.Error(), "reading the cluster configuration") {
		t.Errorf("supervisor reported step %q, error %v; want the configuration unreadable\noutput:\n%s", step, err, out.String())
	}
	var exitErr *exec.ExitError
	if !errors.As(waitErr, &exitErr) || exitErr.ExitCode() != 1 {
		t.Errorf("supervisor exit: %v, want status 1\noutput:\n%s", waitErr, out.String())
	}
}
