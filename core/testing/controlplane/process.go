package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// process is one child binary running in its own process group with output in a log file.
type process struct {
	name    string
	logFile string
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{} // closed once the process has been reaped
	waitErr error         // valid after exited is closed
}

// startProcess runs path with args, appending stdout and stderr to <dir>/<name>.log.
//
// The child gets its own process group so Stop can signal everything it spawned, and
// PDEATHSIG so it dies with the test binary even if the test is killed before Stop runs.
// PDEATHSIG fires when the parent *thread* exits, so the process is started and reaped from
// a goroutine locked to its OS thread for the child's whole life.
func startProcess(dir, name, path string, args []string) (*process, error) {
	p := &process{name: name, logFile: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	logOut, err := os.OpenFile(p.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating log file for %s: %w", name, err)
	}

	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, after the child
		defer close(p.exited)
		defer logOut.Close()

		p.cmd = exec.Command(path, args...)
		p.cmd.Stdout, p.cmd.Stderr = logOut, logOut
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := p.cmd.Start(); err != nil {
			started <- fmt.Errorf("starting %s (%s): %w", name, path, err)
			return
		}
		p.started = time.Now()
		started <- nil
		p.waitErr = p.cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// running reports whether the process has not exited yet.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace, and waits for the reap.
func (p *process) stop(grace time.Duration) error {
	pgid := p.cmd.Process.Pid // equal to the pgid because of Setpgid
	if p.running() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(grace):
		}
	}
	// Kill the group even after the leader exited: a grandchild may still hold it.
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing process group of %s (pgid %d): %w", p.name, pgid, err)
	}
	<-p.exited
	return nil
}

// observe returns the process's state now, for the start watch and its failure message.
func (p *process) observe(now time.Time) procState {
	s := procState{name: p.name, pid: p.cmd.Process.Pid, age: now.Sub(p.started)}
	if info, err := os.Stat(p.logFile); err == nil {
		s.logSize = info.Size()
	}
	select {
	case <-p.exited:
		s.exited, s.exit = true, "exit status 0"
		if p.waitErr != nil {
			s.exit = p.waitErr.Error()
		}
		if ps := p.cmd.ProcessState; ps != nil {
			s.cpu = ps.UserTime() + ps.SystemTime()
		}
	default:
		// Unreadable only if the process just ended; the next look sees it exited.
		s.state, s.cpu, _ = procStat(s.pid)
	}
	return s
}

// logTail returns the last lines of the process's log, for error messages.
func (p *process) logTail(lines int) string {
	data, err := os.ReadFile(p.logFile)
	if err != nil {
		return fmt.Sprintf("(could not read %s: %v)", p.logFile, err)
	}
	data = bytes.TrimRight(data, "\n")
	all := bytes.Split(data, []byte("\n"))
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return string(bytes.Join(all, []byte("\n")))
}
