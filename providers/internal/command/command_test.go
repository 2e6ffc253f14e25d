package command

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestPretty(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"ctr", "-n", "k8s.io", "images", "import", "/tmp/a b.tar"}, "ctr -n k8s.io images import '/tmp/a b.tar'"},
		{[]string{"echo", ""}, "echo ''"},
		{[]string{"sh", "-c", "echo 'hi'; exit 1"}, `sh -c 'echo '\''hi'\''; exit 1'`},
		{[]string{"kubeadm", "init", "--config=/etc/x.yaml", "--ignore-preflight-errors=Swap,NumCPU"}, "kubeadm init --config=/etc/x.yaml --ignore-preflight-errors=Swap,NumCPU"},
	}
	for _, tt := range tests {
		if got := Pretty(tt.argv); got != tt.want {
			t.Errorf("Pretty(%q) = %s, want %s", tt.argv, got, tt.want)
		}
	}
}

func TestRunErrorKeepsCommandAndOutput(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	r := Runner{Log: &log}
	_, err := r.Output(context.Background(), "sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3")
	var runErr *RunError
	if !errors.As(err, &runErr) {
		t.Fatalf("want *RunError, got %T: %v", err, err)
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Errorf("want exit code 3 in the chain, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{`command sh -c 'echo to-stdout; echo to-stderr >&2; exit 3' failed`, "to-stdout", "to-stderr"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if !strings.HasPrefix(log.String(), "$ sh -c") || !strings.Contains(log.String(), "to-stderr") {
		t.Errorf("log does not record the command and output: %q", log.String())
	}
}

func TestRunErrorTailsLongOutput(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	for i := range 100 {
		out.WriteString(strings.Repeat("x", i%3+1) + "\n")
	}
	err := &RunError{Command: []string{"x"}, Output: []byte(out.String()), Err: errors.New("boom")}
	msg := err.Error()
	if !strings.Contains(msg, "(60 lines omitted)") {
		t.Errorf("long output not shortened: %q", msg)
	}
	if got := strings.Count(msg, "\n"); got != outputTailLines+2 { // "output:" and the omission note
		t.Errorf("message has %d newlines, want %d", got, outputTailLines+2)
	}
}

func TestRunMissingProgram(t *testing.T) {
	t.Parallel()
	err := Runner{}.Run(context.Background(), "/nonexistent/sealion-no-such-program", "arg")
	var runErr *RunError
	if !errors.As(err, &runErr) || runErr.Command[0] != "/nonexistent/sealion-no-such-program" {
		t.Fatalf("want *RunError naming the program, got %v", err)
	}
}

func TestRunnerUsesPATHOfItsEnvironment(t *testing.T) {
	// Not parallel: it writes a program and runs it, and a fork by a parallel test can hold the
	// file open for writing meanwhile ("text file busy", golang/go#22315).
	dir := t.TempDir()
	script := "#!/bin/sh\necho from-env-path\n"
	if err := os.WriteFile(filepath.Join(dir, "sealion-test-tool"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := Runner{Env: []string{"PATH=" + dir + ":/usr/bin:/bin"}}
	out, err := r.Output(context.Background(), "sealion-test-tool")
	if err != nil || strings.TrimSpace(string(out)) != "from-env-path" {
		t.Fatalf("Output = %q, %v; want the program found through the Runner's PATH", out, err)
	}
}
