package hostproc

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestIsZombie(t *testing.T) {
	t.Parallel()
	for stat, want := range map[string]bool{
		"42 (docker) S 1 42 42 0 -1":      false,
		"42 (docker) Z 1 42 42 0 -1":      true,
		"42 (odd) name) Z 1 42 42 0 -1":   true,
		"42 (odd) Z name) R 1 42 42 0 -1": false,
		"123 (a)":                         false, // truncated
		"garbage":                         false,
	} {
		if got := IsZombie([]byte(stat)); got != want {
			t.Errorf("IsZombie(%q) = %v, want %v", stat, got, want)
		}
	}
}

func TestParentPID(t *testing.T) {
	t.Parallel()
	for stat, want := range map[string]int{
		"42 (kube-apiserver) S 7 42 42 0 -1": 7,
		"42 (odd) S 3) R 9 42 42 0 -1":       9,
		"42 (short) S":                       -1,
		"garbage":                            -1,
	} {
		got, ok := parentPID([]byte(stat))
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("parentPID(%q) = %d, want %d", stat, got, want)
		}
	}
}

// TestTerminateChild finds a child of this test by its executable's name and stops it, as a
// provider stops a control-plane process its supervisor restarts.
func TestTerminateChild(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })

	pids, err := ChildrenNamed(os.Getpid(), "sleep")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, cmd.Process.Pid) {
		t.Fatalf("ChildrenNamed(self, sleep) = %v, want it to hold %d", pids, cmd.Process.Pid)
	}
	if others, _ := ChildrenNamed(os.Getpid(), "no-such-program"); len(others) != 0 {
		t.Errorf("children named no-such-program: %v", others)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Terminate(ctx, cmd.Process.Pid, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if Running(cmd.Process.Pid) {
		t.Error("the child still runs after Terminate")
	}
	if err := Terminate(ctx, 1<<22+1, time.Second); err != nil { // above pid_max: no such process
		t.Errorf("Terminate of a missing process: %v", err)
	}
}

// TestTerminateKillsAfterGrace: a process that ignores SIGTERM is killed after the grace period,
// and the error says so.
func TestTerminateKillsAfterGrace(t *testing.T) {
	cmd := exec.Command("sh", "-c", `trap "" TERM; while :; do sleep 0.1; done`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	time.Sleep(200 * time.Millisecond) // let the shell install its trap
	err := Terminate(context.Background(), cmd.Process.Pid, 300*time.Millisecond)
	if err == nil {
		t.Fatal("Terminate of a process ignoring SIGTERM reported a graceful stop")
	}
	if Running(cmd.Process.Pid) {
		t.Error("the process still runs")
	}
}
