// Package hostlock serialises the use of this machine's single node slot: only one containerd,
// kubelet or cluster may run on the host at a time, and whoever runs one holds an exclusive
// flock on a well-known file for the whole time (the shell equivalent is `flock <path> <command>`).
package hostlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// DefaultPath is the lock file every sealion tool and helper agrees on.
const DefaultPath = "/tmp/sealion-host.lock"

// Lock is a held lock; Release it when the host is clean again.
type Lock struct{ f *os.File }

// Acquire takes the lock at path, waiting while ctx allows. The lock belongs to the open file,
// so a program already running under `flock <path>` must not call Acquire on the same path:
// it would wait for itself.
func Acquire(ctx context.Context, path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("opening host lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &Lock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for host lock %s (another cluster, containerd or kubelet runs on this machine): %w", path, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Release gives the lock up.
func (l *Lock) Release() error {
	defer l.f.Close()
	if err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN); err != nil {
		return fmt.Errorf("unlocking %s: %w", l.f.Name(), err)
	}
	return nil
}

// File is the locked file, for handing the lock to a child process (exec.Cmd.ExtraFiles): an
// flock belongs to the open file, so the child holds the lock for as long as it keeps the file
// open, even after this process exits. Close this process's copy then, do not Release it.
func (l *Lock) File() *os.File { return l.f }

// Close closes this process's copy of the lock file without unlocking, so a child that was handed
// the file keeps the lock; with no such child the lock is released.
func (l *Lock) Close() error { return l.f.Close() }
