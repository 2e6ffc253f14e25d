package controlplane

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStartWatch(t *testing.T) {
	const (
		stall = 60 * time.Second
		limit = 5 * time.Minute
		step  = 10 * time.Second
	)
	begin := time.Unix(1_000_000, 0)
	running := func(logSize int64, cpu time.Duration) procState {
		return procState{name: "etcd", pid: 42, state: "S", logSize: logSize, cpu: cpu}
	}
	tests := []struct {
		name string
		// at returns the observation at the i-th step, i*step after begin.
		at func(i int) observation
		// wantStop is the step at which the watch gives up, with an error containing wantErr.
		wantStop int
		wantErr  []string
	}{
		{
			name: "log growth keeps it waiting until the limit",
			at: func(i int) observation {
				return observation{probe: "connection refused", procs: []procState{running(int64(i), 0)}}
			},
			wantStop: 30, wantErr: []string{"not ready after 300.0 s, the start limit", "progress 0.0 s ago"},
		},
		{
			name: "CPU time alone is progress",
			at: func(i int) observation {
				return observation{probe: "connection refused", procs: []procState{running(0, time.Duration(i)*time.Millisecond)}}
			},
			wantStop: 30, wantErr: []string{"the start limit"},
		},
		{
			name: "a changing /readyz answer alone is progress",
			at: func(i int) observation {
				return observation{probe: "status 500: step " + string(rune('a'+i%26)), procs: []procState{running(0, 0)}}
			},
			wantStop: 30, wantErr: []string{"the start limit"},
		},
		{
			name: "nothing moves: stalled after the window",
			at: func(i int) observation {
				return observation{probe: "connection refused", procs: []procState{running(0, 0)}}
			},
			wantStop: 6, wantErr: []string{"stalled", "no log growth, no CPU progress", "for 60.0 s (60.0 s after the start)"},
		},
		{
			name: "the window counts from the last progress",
			at: func(i int) observation {
				return observation{probe: "connection refused", procs: []procState{running(int64(min(i, 4)), 0)}}
			},
			wantStop: 10, wantErr: []string{"stalled", "for 60.0 s (100.0 s after the start)"},
		},
		{
			name: "an exit ends the wait at once, even while others progress",
			at: func(i int) observation {
				dead := procState{name: "kube-apiserver", pid: 43, exited: i >= 2, exit: "exit status 1", logSize: 100}
				return observation{probe: "connection refused", procs: []procState{running(int64(i), 0), dead}}
			},
			wantStop: 2, wantErr: []string{"kube-apiserver exited (exit status 1) before the control plane was ready, 20.0 s after the start"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newStartWatch(begin, stall, limit)
			for i := 1; ; i++ {
				o := tt.at(i)
				o.at = begin.Add(time.Duration(i) * step)
				err := w.check(o)
				if err == nil {
					if i >= tt.wantStop {
						t.Fatalf("still waiting at step %d; want it to give up at step %d", i, tt.wantStop)
					}
					continue
				}
				if i != tt.wantStop {
					t.Fatalf("gave up at step %d (%v); want step %d", i, err, tt.wantStop)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
		})
	}
}

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and a parenthesis, 150 ticks of user and 25 of system time.
	line := "4242 (kube (api) server) D 1 4242 7 0 -1 4194304 101 0 0 0 150 25 0 0 20 0 1 0 21650 3133440 414\n"
	state, cpu, err := parseProcStat([]byte(line))
	if err != nil || state != "D" || cpu != 1750*time.Millisecond {
		t.Errorf("parseProcStat = %q, %v, %v; want D, 1.75s, nil", state, cpu, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 x 0"} {
		if _, _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parseProcStat(%q) succeeded; want an error", bad)
		}
	}
}

// TestStartWithDoneContext checks that a caller whose context ran out before Start is told so,
// rather than getting a start that fails at the first probe with empty logs.
func TestStartWithDoneContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Start(ctx, Options{})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "already done") {
		t.Fatalf("Start() error = %v; want one saying the context was already done", err)
	}
}

// TestStartFailureDescribesProcesses checks the failure message with real (shell) processes:
// one that exited without a word and one still running.
func TestStartFailureDescribesProcesses(t *testing.T) {
	cp := &ControlPlane{Dir: t.TempDir(), URL: "https://127.0.0.1:1"}
	quiet, err := startProcess(cp.Dir, "quiet", "/bin/sh", []string{"-c", "exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	<-quiet.exited
	sleeper, err := startProcess(cp.Dir, "sleeper", "/bin/sh", []string{"-c", "exec sleep 60"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.stop(time.Second) })
	cp.processes = []*process{quiet, sleeper}

	watch := newStartWatch(time.Now(), stallWindow, defaultStartTimeout)
	o := cp.observe(errors.New("connection refused"))
	why := watch.check(o)
	if why == nil {
		t.Fatal("the watch goes on waiting although a process exited")
	}
	msg := cp.startFailure(why, o).Error()
	for _, want := range []string{
		"quiet exited (exit status 3) before the control plane was ready",
		"last /readyz answer: connection refused",
		"quiet: pid " + strconv.Itoa(quiet.cmd.Process.Pid) + ", exited (exit status 3), ",
		"sleeper: pid " + strconv.Itoa(sleeper.cmd.Process.Pid) + ", running, state ",
		"--- last lines of " + quiet.logFile + " ---\n(empty: the process wrote nothing in ",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("start failure does not contain %q:\n%s", want, msg)
		}
	}
}
