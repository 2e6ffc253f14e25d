// Package outage makes a service on this machine go down and come back, as its clients see it:
// a TCP forwarder in front of the service whose address the clients are given instead. Cut closes
// every open connection and refuses new ones (connection refused, as when the service's process
// is gone); Restore listens on the same address again. The service itself keeps running, so its
// state (sessions, users, keys) survives the outage, as it would behind a network failure.
package outage

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// Forwarder forwards connections from its address to a target while it is up.
type Forwarder struct {
	addr, target string

	mu    sync.Mutex
	ln    net.Listener          // nil while cut
	conns map[net.Conn]struct{} // both ends of every open connection
	wg    sync.WaitGroup
}

// Start listens on listen ("IP:0" picks a free port) and forwards to target.
func Start(listen, target string) (*Forwarder, error) {
	f := &Forwarder{target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("outage forwarder to %s: %w", target, err)
	}
	f.addr = ln.Addr().String()
	f.serve(ln)
	return f, nil
}

// Addr is the forwarder's address ("IP:port"), which clients use instead of the target's.
func (f *Forwarder) Addr() string { return f.addr }

// Port is the port of Addr.
func (f *Forwarder) Port() string {
	_, port, _ := net.SplitHostPort(f.addr)
	return port
}

func (f *Forwarder) serve(ln net.Listener) {
	f.mu.Lock()
	f.ln = ln
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by Cut or Close
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				f.forward(c)
			}()
		}
	}()
}

// forward copies between c and a new connection to the target until either side ends.
func (f *Forwarder) forward(c net.Conn) {
	up, err := net.Dial("tcp", f.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !f.track(c, up) {
		return // cut meanwhile
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
	f.untrack(c, up)
}

// track records an open connection pair, or closes it when the forwarder is cut.
func (f *Forwarder) track(conns ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln == nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *Forwarder) untrack(conns ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(f.conns, c)
	}
}

// Cut takes the service down for its clients: open connections are closed and new ones refused.
func (f *Forwarder) Cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln == nil {
		return
	}
	_ = f.ln.Close()
	f.ln = nil
	for c := range f.conns {
		_ = c.Close()
	}
}

// Restore brings the service back at the same address.
func (f *Forwarder) Restore() error {
	f.mu.Lock()
	up := f.ln != nil
	f.mu.Unlock()
	if up {
		return nil
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("outage forwarder: listening on %s again: %w", f.addr, err)
	}
	f.serve(ln)
	return nil
}

// Close cuts the forwarder for good and waits for its goroutines.
func (f *Forwarder) Close() error {
	f.Cut()
	f.wg.Wait()
	return nil
}
