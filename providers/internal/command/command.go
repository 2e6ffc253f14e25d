// Package command runs host commands for providers and keeps, when one fails, everything needed
// to debug it: the command line (printed so it can be pasted into a shell), its output and the cause.
package command

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// outputTailLines bounds how much output a RunError message shows; RunError.Output keeps all of it.
const outputTailLines = 40

// RunError is a command that could not start or exited with an error.
type RunError struct {
	// Command is the program and its arguments.
	Command []string
	// Output is the combined stdout and stderr.
	Output []byte
	// Err is the cause, usually an *exec.ExitError.
	Err error
}

func (e *RunError) Error() string {
	msg := fmt.Sprintf("command %s failed: %v", Pretty(e.Command), e.Err)
	if tail := Tail(e.Output, outputTailLines); tail != "" {
		msg += "\noutput:\n" + tail
	}
	return msg
}

func (e *RunError) Unwrap() error { return e.Err }

// Runner runs commands and, when Log is set, records each command line and its output there.
type Runner struct {
	Log io.Writer
	// Env, when set, replaces the environment of every command (as exec.Cmd.Env does).
	Env []string
}

// Output runs name with args and returns its combined output, or a *RunError.
func (r Runner) Output(ctx context.Context, name string, args ...string) ([]byte, error) {
	return r.run(ctx, nil, name, args...)
}

// Run runs name with args, discarding the output unless it fails (then it is in the *RunError).
func (r Runner) Run(ctx context.Context, name string, args ...string) error {
	_, err := r.run(ctx, nil, name, args...)
	return err
}

// RunWithInput runs name with args reading stdin from in.
func (r Runner) RunWithInput(ctx context.Context, in io.Reader, name string, args ...string) error {
	_, err := r.run(ctx, in, name, args...)
	return err
}

func (r Runner) run(ctx context.Context, in io.Reader, name string, args ...string) ([]byte, error) {
	argv := append([]string{name}, args...)
	cmd := exec.CommandContext(ctx, lookPath(name, r.Env), args...)
	cmd.Stdin = in
	cmd.Env = r.Env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if r.Log != nil {
		fmt.Fprintf(r.Log, "$ %s\n", Pretty(argv))
	}
	err := cmd.Run()
	if r.Log != nil {
		_, _ = r.Log.Write(out.Bytes())
	}
	if err != nil {
		return out.Bytes(), &RunError{Command: argv, Output: out.Bytes(), Err: err}
	}
	return out.Bytes(), nil
}

// lookPath finds name in the PATH of env, since exec.Command searches the caller's PATH even
// when the command gets another environment. Unresolved names are left to exec.Command.
func lookPath(name string, env []string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for i := len(env) - 1; i >= 0; i-- {
		path, ok := strings.CutPrefix(env[i], "PATH=")
		if !ok {
			continue
		}
		for _, dir := range filepath.SplitList(path) {
			candidate := filepath.Join(dir, name)
			if info, err := os.Stat(candidate); err == nil && !info.IsDir() && info.Mode().Perm()&0o111 != 0 {
				return candidate
			}
		}
		break
	}
	return name
}

// Pretty renders argv as one shell command line, quoting only the words that need it.
func Pretty(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = quote(a)
	}
	return strings.Join(words, " ")
}

func quote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, needsQuoting) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func needsQuoting(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	case strings.ContainsRune("-_./:=,+@%", r):
		return false
	}
	return true
}

// Tail returns the last n lines of out without the trailing newline.
func Tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d lines omitted)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
