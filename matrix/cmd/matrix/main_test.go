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
