package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRestartsAfterExitAndWaitsUntilReady(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logFile := filepath.Join(dir, "daemon.log")
	var calls atomic.Int32
	p, err := Start(Spec{
		Name: "daemon", LogFile: logFile, Restart: true, RestartDelay: 10 * time.Millisecond,
		Command: func() ([]string, error) {
			n := calls.Add(1)
			if n == 1 {
				return nil, ErrNotReady
			}
			if n <= 3 {
				return []string{"sh", "-c", "echo run; exit 7"}, nil
			}
			return []string{"sleep", "60"}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the fourth start", func() bool { return calls.Load() >= 4 && p.Running() })
	if err := p.LastError(); err == nil || !strings.Contains(err.Error(), "exit status 7") {
		t.Errorf("LastError = %v, want the exit status of the crashed run", err)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Error("still running after Stop")
	}
	log, _ := os.ReadFile(logFile)
	if got := strings.Count(string(log), "run\n"); got != 2 {
		t.Errorf("log has %d runs, want 2:\n%s", got, log)
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStopKillsProcessGroupIgnoringTERM(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	p, err := Start(Spec{
		Name: "stubborn", LogFile: filepath.Join(t.TempDir(), "log"),
		Command: func() ([]string, error) {
			return []string{"sh", "-c", `trap "" TERM; sleep 60 & echo $! > ` + pidFile + `; wait`}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The shell creates the file before it writes the pid, so wait for the whole line: read
	// too early, an empty pid names /proc/stat, which never looks dead.
	var pid string
	waitFor(t, "the grandchild pid", func() bool {
		data, _ := os.ReadFile(pidFile)
		pid = strings.TrimSuffix(string(data), "\n")
		return strings.HasSuffix(string(data), "\n") && pid != ""
	})
	start := time.Now()
	if err := p.Stop(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("Stop took %v", time.Since(start))
	}
	waitFor(t, "the grandchild to die", func() bool { return dead(pid) })
}

// dead reports whether the process pid has exited: gone, or a zombie. Killed together with its
// parent, the grandchild may be reparented before it is reaped, and whoever adopts it (PID 1 here
// is not an init that reaps) may leave it a zombie for good.
func dead(pid string) bool {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if os.IsNotExist(err) {
		return true
	}
	// The state follows the command name, which is in parentheses and may itself hold some.
	i := strings.LastIndexByte(string(stat), ')')
	return err == nil && i >= 0 && strings.HasPrefix(string(stat[i+1:]), " Z")
}

func TestFirstStartFailureIsReturned(t *testing.T) {
	t.Parallel()
	_, err := Start(Spec{
		Name: "missing", LogFile: filepath.Join(t.TempDir(), "log"), Restart: true,
		Command: func() ([]string, error) { return []string{"/nonexistent/sealion-daemon"}, nil },
	})
	if err == nil || !strings.Contains(err.Error(), "starting missing (/nonexistent/sealion-daemon)") {
		t.Fatalf("want a start error naming the daemon, got %v", err)
	}
}
