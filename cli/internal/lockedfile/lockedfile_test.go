package lockedfile

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

// Concurrent read-modify-writes each see the one before: none is lost.
func TestUpdateSerializes(t *testing.T) {
	f := File{Path: filepath.Join(t.TempDir(), "sub", "counter"), Name: "test file", LockTimeout: 10 * time.Second}
	const writers = 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- f.Update(func(old []byte) ([]byte, error) {
				n, _ := strconv.Atoi(string(old))
				runtime.Gosched()
				return []byte(strconv.Itoa(n + 1)), nil
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(f.Path)
	if err != nil || string(data) != strconv.Itoa(writers) {
		t.Fatalf("counter = %q, %v; want %d", data, err, writers)
	}
	info, err := os.Stat(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
}

// A lock another holder keeps past the timeout fails the update with the lock's path, and leaves
// the file as it was.
func TestUpdateTimesOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache")
	if err := os.WriteFile(path, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := flock.New(path + ".lock")
	if ok, err := other.TryLock(); !ok || err != nil {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	defer other.Unlock()
	f := File{Path: path, Name: "session cache", LockTimeout: 50 * time.Millisecond}
	err := f.Update(func([]byte) ([]byte, error) { return []byte("lost"), nil })
	if err == nil || !strings.Contains(err.Error(), "locking the session cache "+path+".lock") {
		t.Fatalf("Update = %v, want a lock timeout naming the lock file", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "kept" {
		t.Errorf("file = %q, want it unchanged", data)
	}
	// With no timeout at all the update still tries once, and succeeds once the lock is free.
	if err := other.Unlock(); err != nil {
		t.Fatal(err)
	}
	f.LockTimeout = 0
	if err := f.Update(func([]byte) ([]byte, error) { return []byte("new"), nil }); err != nil {
		t.Fatal(err)
	}
}
