// Package syncbuffer is a buffer that goroutines write while a test reads it: a process's
// output, a server's audit events, a command's progress.
package syncbuffer

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer whose writes and reads may happen at once. The zero value is empty
// and ready.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
