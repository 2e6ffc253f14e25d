package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sealion.dev/core/testing/testdeps"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	cert, key := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n"
	if err := os.WriteFile(certPath, []byte(cert), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantStatus int
		wantStderr string
	}{
		{name: "print", args: []string{"print"}, env: map[string]string{"CERT_PATH": certPath, "KEY_PATH": keyPath}},
		{name: "print without paths", args: []string{"print"}, env: map[string]string{"CERT_PATH": certPath}, wantStatus: 1, wantStderr: "CERT_PATH and KEY_PATH must both be set"},
		{name: "print a missing file", args: []string{"print"}, env: map[string]string{"CERT_PATH": certPath, "KEY_PATH": filepath.Join(dir, "nope")}, wantStatus: 1, wantStderr: "no such file"},
		{name: "no subcommand", wantStatus: 2, wantStderr: "usage"},
		{name: "unknown subcommand", args: []string{"dance"}, wantStatus: 2, wantStderr: "usage"},
		{name: "extra arguments", args: []string{"print", "x"}, wantStatus: 2, wantStderr: "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(tt.args, env(tt.env), &stdout, &stderr, nil); got != tt.wantStatus {
				t.Fatalf("status %d, want %d (stderr %q)", got, tt.wantStatus, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.wantStderr)
			}
			if tt.wantStatus != 0 {
				return
			}
			var got map[string][]byte // encoding/json decodes base64 into []byte
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("output %q is not the expected JSON: %v", stdout.String(), err)
			}
			if string(got["tls.crt"]) != cert || string(got["tls.key"]) != key || len(got) != 2 {
				t.Errorf("decoded %q", got)
			}
		})
	}
}

func TestSleepReturnsOnSignal(t *testing.T) {
	stop := make(chan os.Signal, 1)
	done := make(chan int)
	go func() { done <- run([]string{"sleep"}, nil, nil, nil, stop) }()
	select {
	case <-done:
		t.Fatal("sleep returned before it was stopped")
	case <-time.After(50 * time.Millisecond):
	}
	stop <- syscall.SIGTERM
	select {
	case status := <-done:
		if status != 0 {
			t.Errorf("status %d", status)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("sleep did not return after SIGTERM")
	}
}

// The agent's pod has a 32Mi limit and the Concierge may exec into it while it sleeps: the
// sleeping process must stay small. Its anonymous (private, unreclaimable) memory is measured; the
// rest of its RSS is the mapped binary, page cache shared with every exec. Builds the binary, so it
// is skipped under -short.
func TestSleepingMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped under -short")
	}
	bin := filepath.Join(t.TempDir(), "agent")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "sleep")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	status, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if waitErr := cmd.Wait(); waitErr != nil {
		t.Errorf("sleep did not exit cleanly on SIGTERM: %v", waitErr)
	}
	testdeps.Require(t, err)
	kib := map[string]int{}
	for _, line := range strings.Split(string(status), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(value), " kB")); ok && err == nil {
			kib[name] = n
		}
	}
	t.Logf("sleeping: VmRSS %d KiB, of which anonymous %d KiB", kib["VmRSS"], kib["RssAnon"])
	if n, ok := kib["RssAnon"]; !ok || n >= 1024 {
		t.Errorf("anonymous RSS %d KiB (found: %v), want under 1 MiB", n, ok)
	}
}
