// Package hostproc reads and stops this machine's processes through /proc, for providers whose
// clusters run as host processes: whether a process still runs (a zombie does not), which
// children a process has, and a graceful stop that waits until the process is gone.
package hostproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pollInterval is how often Terminate looks whether the process is gone.
const pollInterval = 50 * time.Millisecond

// IsZombie reads the state field of /proc/<pid>/stat, which follows the parenthesised command
// name (which may itself hold parentheses and spaces).
func IsZombie(stat []byte) bool {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// parentPID reads the parent's pid, the field after the state in /proc/<pid>/stat.
func parentPID(stat []byte) (int, bool) {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}

// Running reports whether pid is a process that has not exited (a zombie has).
func Running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !IsZombie(stat)
}

// ChildrenNamed returns the running children of parent whose executable's base name is name.
func ChildrenNamed(parent int, name string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || IsZombie(stat) {
			continue // gone meanwhile, or exited
		}
		if ppid, ok := parentPID(stat); !ok || ppid != parent {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && filepath.Base(exe) == name {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Terminate sends pid SIGTERM and waits until it has exited, as a graceful stop by an init system
// would; after grace it sends SIGKILL and says so in its error. A process already gone is not an
// error.
func Terminate(ctx context.Context, pid int, grace time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
		return nil
	} else if err != nil {
		return fmt.Errorf("signalling pid %d: %w", pid, err)
	}
	deadline := time.Now().Add(grace)
	killed := false
	for Running(pid) {
		if !killed && time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for pid %d to exit: %w", pid, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
	if killed {
		return fmt.Errorf("pid %d did not exit within %s of SIGTERM, so it was killed", pid, grace)
	}
	return nil
}
