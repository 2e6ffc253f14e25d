package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"sealion.dev/providers/all"
)

// TestMain calls all.Main as every test package linking the providers must, though none of its
// tests creates a cluster.
func TestMain(m *testing.M) {
	all.Main()
	os.Exit(m.Run())
}

// Usage errors are caught before anything is resolved or run.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cells", "kubeadm/1.33/webhook/extra"}, "more than distribution/version/path"},
		{[]string{"--cells", "kubeadm/{1.33"}, "unbalanced braces"},
		{[]string{"kubeadm/1.33"}, "cells go in --cells"},
		{[]string{"--baseline", "/nonexistent/old/results.json"}, "/nonexistent/old/results.json"},
	} {
		code, err := matrixMain(tc.args, io.Discard, io.Discard)
		if code != 2 || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: code %d, err %v; want 2 and %q", tc.args, code, err, tc.want)
		}
	}
	if code, _ := matrixMain([]string{"--no-such-flag"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("unknown flag: code %d", code)
	}
}

// Colour only on a terminal, and never with NO_COLOR set.
func TestColorTerminal(t *testing.T) {
	t.Parallel()
	tty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer tty.Close()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	env := func(noColor string) func(string) string {
		return func(k string) string { return map[string]string{"NO_COLOR": noColor}[k] }
	}
	if !colorTerminal(tty, env("")) || colorTerminal(tty, env("1")) || colorTerminal(devNull, env("")) || colorTerminal(io.Discard, env("")) {
		t.Error("colour on a terminal without NO_COLOR only")
	}
}
