// Package daemon keeps a host daemon (containerd, the kubelet) running as a child process
// the way an init system would on a machine without one: output appended to a log file, a
// restart after an unexpected exit, and a stop that takes down the daemon's whole process group.
//
// Each child gets PDEATHSIG so it dies with the supervising program even when that program is
// killed before it can stop it. PDEATHSIG fires when the parent *thread* exits, so children are
// started and reaped from one goroutine locked to its OS thread.
package daemon

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// ErrNotReady, returned by Spec.Command, means the daemon cannot start yet (for example the
// kubelet before kubeadm wrote its configuration); the supervisor asks again after RestartDelay.
var ErrNotReady = errors.New("not ready to start")

// Spec describes one daemon.
type Spec struct {
	// Name is used in errors and log lines.
	Name string
	// LogFile receives the daemon's stdout and stderr, appended across restarts.
	LogFile string
	// Command returns the program and arguments at each start, so a restart picks up
	// configuration written since the last one.
	Command func() ([]string, error)
	// Restart restarts the daemon after it exits (or Command fails), until Stop.
	Restart bool
	// RestartDelay is the pause before a restart; one second when zero.
	RestartDelay time.Duration
}

// Process is a supervised daemon.
type Process struct {
	spec Spec
	log  *os.File

	mu       sync.Mutex
	cmd      *exec.Cmd // the running child, nil between runs
	stopping bool
	lastErr  error

	stop chan struct{} // closed by Stop
	done chan struct{} // closed when the supervising goroutine has ended
}

// Start begins supervising. It returns an error when the first start fails for a reason other
// than ErrNotReady; later failures are written to the log file and retried when Restart is set.
func Start(spec Spec) (*Process, error) {
	if spec.RestartDelay == 0 {
		spec.RestartDelay = time.Second
	}
	log, err := os.OpenFile(spec.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening log file of %s: %w", spec.Name, err)
	}
	p := &Process{spec: spec, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	first := make(chan error, 1)
	go p.loop(first)
	if err := <-first; err != nil {
		<-p.done
		return nil, err
	}
	return p, nil
}

func (p *Process) loop(first chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, after the children
	defer close(p.done)
	defer p.log.Close()
	reported := false
	report := func(err error) {
		if !reported {
			reported = true
			first <- err
		}
	}
	for {
		err := p.runOnce(func() { report(nil) })
		switch {
		case errors.Is(err, ErrNotReady):
		case err != nil && !reported:
			report(err)
			return
		case err != nil:
			p.setLastErr(err)
			fmt.Fprintf(p.log, "supervisor: %s: %v\n", p.spec.Name, err)
		}
		report(nil)
		if !p.spec.Restart {
			return
		}
		select {
		case <-p.stop:
			return
		case <-time.After(p.spec.RestartDelay):
		}
	}
}

// runOnce starts the daemon, calls started, and waits for it to exit. A nil error means it was
// started and then exited (reported through the log and LastError); start failures are returned.
func (p *Process) runOnce(started func()) error {
	argv, err := p.spec.Command()
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		return nil
	}
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		return fmt.Errorf("starting %s (%s): %w", p.spec.Name, argv[0], err)
	}
	p.cmd = cmd
	p.mu.Unlock()
	started()

	waitErr := cmd.Wait()
	p.mu.Lock()
	p.cmd = nil
	stopping := p.stopping
	p.mu.Unlock()
	if !stopping {
		p.setLastErr(fmt.Errorf("%s exited: %v", p.spec.Name, waitErrText(waitErr)))
		fmt.Fprintf(p.log, "supervisor: %s exited: %v\n", p.spec.Name, waitErrText(waitErr))
	}
	return nil
}

func waitErrText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func (p *Process) setLastErr(err error) {
	p.mu.Lock()
	p.lastErr = err
	p.mu.Unlock()
}

// LastError returns why the daemon last exited or failed to start, or nil if it never did.
func (p *Process) LastError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// Running reports whether the daemon's process is alive right now.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// Stop ends supervision: SIGTERM to the daemon's process group, SIGKILL after grace, and a wait
// until the child is reaped. Calling Stop again is harmless.
func (p *Process) Stop(grace time.Duration) error {
	p.mu.Lock()
	if !p.stopping {
		p.stopping = true
		close(p.stop)
	}
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		<-p.done
		return nil
	}
	pgid := cmd.Process.Pid // the group id, because of Setpgid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	// Kill the group even after the leader exited: a child of the daemon may still be in it.
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing process group of %s (pgid %d): %w", p.spec.Name, pgid, err)
	}
	<-p.done
	return nil
}
