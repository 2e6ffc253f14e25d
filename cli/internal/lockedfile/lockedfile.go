// Package lockedfile updates the small per-user files of the CLI (its caches), which several
// kubectl-started plugin processes may change at once: every read-modify-write holds an exclusive
// lock on a sibling "<file>.lock", and the new contents replace the file atomically with mode 0600,
// so that neither a concurrent writer nor a crash loses or truncates it.
package lockedfile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

const lockPollInterval = 10 * time.Millisecond

// File is one such file.
type File struct {
	// Path is where the file lives; its directory is created (mode 0700) when missing.
	Path string
	// Name says what the file holds ("credential cache"), for error messages.
	Name string
	// LockTimeout is how long to wait for another process's lock.
	LockTimeout time.Duration
}

// Update calls change with the file's current contents (nil when it does not exist or cannot be
// read) while holding the lock, and writes what change returns in its place.
func (f File) Update(change func(old []byte) ([]byte, error)) error {
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return fmt.Errorf("creating the %s directory: %w", f.Name, err)
	}
	unlock, err := f.lock()
	if err != nil {
		return err
	}
	defer unlock()

	old, err := os.ReadFile(f.Path)
	if err != nil {
		old = nil
	}
	data, err := change(old)
	if err != nil {
		return err
	}
	return f.write(data)
}

// write replaces the file atomically, so that a crash never leaves it half-written.
func (f File) write(data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), filepath.Base(f.Path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing the %s: %w", f.Name, err)
	}
	defer os.Remove(tmp.Name())
	if err = tmp.Chmod(0o600); err == nil {
		_, err = tmp.Write(data)
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.Path)
	}
	if err != nil {
		return fmt.Errorf("writing the %s %s: %w", f.Name, f.Path, err)
	}
	return nil
}

// lock takes the exclusive lock on "<file>.lock" (flock on Unix, LockFileEx on Windows), polling
// until the timeout.
func (f File) lock() (func(), error) {
	lockPath := f.Path + ".lock"
	fl := flock.New(lockPath, flock.SetPermissions(0o600))
	locked, err := fl.TryLock()
	if !locked && err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), f.LockTimeout)
		defer cancel()
		locked, err = fl.TryLockContext(ctx, lockPollInterval)
	}
	if !locked {
		_ = fl.Close()
		return nil, fmt.Errorf("locking the %s %s: %w", f.Name, lockPath, err)
	}
	return func() { _ = fl.Unlock() }, nil
}
