package controlplane

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Start waits on progress, not on a fixed deadline: on a busy machine with cold caches etcd and
// kube-apiserver can take minutes to page in and start, while a process that hangs should not
// keep a test waiting for as long. So the wait goes on while the processes are alive and
// something moves (a log grows, CPU time is used, the /readyz answer changes) and ends when
// nothing moved for stallWindow, when the overall limit passes, or at once when a process exits.

// procState is one look at a child process.
type procState struct {
	name    string
	pid     int
	exited  bool
	exit    string        // how it ended, once exited
	state   string        // the /proc state letter (R, S, D...) while running; "" if unreadable
	cpu     time.Duration // user and system CPU time used so far
	logSize int64
	age     time.Duration // since the process was started
}

// observation is one look at the starting control plane.
type observation struct {
	at    time.Time
	probe string // the last /readyz answer, which was not ok
	procs []procState
}

// startWatch decides from successive observations whether the start still makes progress.
// It does no I/O, so its rules are tested with made-up observations.
type startWatch struct {
	stall, limit        time.Duration
	begin, lastProgress time.Time
	last                observation // zero before the first observation
}

func newStartWatch(begin time.Time, stall, limit time.Duration) *startWatch {
	return &startWatch{stall: stall, limit: limit, begin: begin, lastProgress: begin}
}

// check records o and returns why to stop waiting, or nil to wait on.
func (w *startWatch) check(o observation) error {
	if progressed(w.last, o) {
		w.lastProgress = o.at
	}
	w.last = o
	elapsed := o.at.Sub(w.begin)
	for _, p := range o.procs {
		if p.exited {
			return fmt.Errorf("%s exited (%s) before the control plane was ready, %s after the start", p.name, p.exit, secs(elapsed))
		}
	}
	if idle := o.at.Sub(w.lastProgress); idle >= w.stall {
		return fmt.Errorf("stalled: no log growth, no CPU progress and no change of the /readyz answer for %s (%s after the start)", secs(idle), secs(elapsed))
	}
	if elapsed >= w.limit {
		return fmt.Errorf("not ready after %s, the start limit, though the processes still made progress %s ago", secs(elapsed), secs(o.at.Sub(w.lastProgress)))
	}
	return nil
}

// progressed reports whether anything moved from prev to cur. Processes are in the same order in
// every observation; against the zero observation any output or CPU time counts.
func progressed(prev, cur observation) bool {
	if cur.probe != prev.probe && prev.probe != "" {
		return true
	}
	for i, p := range cur.procs {
		var before procState
		if i < len(prev.procs) {
			before = prev.procs[i]
		}
		if p.logSize > before.logSize || p.cpu > before.cpu {
			return true
		}
	}
	return false
}

// String is the one-line summary of the process in a start failure.
func (p procState) String() string {
	status := "running, state " + p.state
	switch {
	case p.exited:
		status = "exited (" + p.exit + ")"
	case p.state == "":
		status = "running, state unknown"
	case p.state == "D":
		status += " (uninterruptible sleep, usually waiting for the disk)"
	case p.state == "R":
		status += " (running or waiting for a CPU)"
	}
	return fmt.Sprintf("%s: pid %d, %s, %s, log %d bytes, started %s ago", p.name, p.pid, status, cpuSecs(p.cpu), p.logSize, secs(p.age))
}

// clockTicks is the unit of the times in /proc/<pid>/stat: USER_HZ, which the kernel fixes at 100
// on the architectures Go supports.
const clockTicks = 100

// procStat returns the scheduler state and the CPU time used by a live process.
func procStat(pid int) (state string, cpu time.Duration, err error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	return parseProcStat(data)
}

// parseProcStat reads the state (field 3) and utime+stime (fields 14 and 15) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and may itself hold
// spaces and parentheses, so fields are counted from the last ')'.
func parseProcStat(data []byte) (state string, cpu time.Duration, err error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return "", 0, fmt.Errorf("malformed /proc stat %q", data)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return "", 0, fmt.Errorf("malformed /proc stat %q", data)
	}
	var ticks uint64
	for _, s := range f[11:13] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return "", 0, fmt.Errorf("malformed /proc stat %q: %w", data, err)
		}
		ticks += n
	}
	return f[0], time.Duration(ticks) * time.Second / clockTicks, nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func cpuSecs(d time.Duration) string { return fmt.Sprintf("%.2f CPU s", d.Seconds()) }
