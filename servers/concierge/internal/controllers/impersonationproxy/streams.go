package impersonationproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
)

// streams are a server's upgraded connections (exec, attach, port-forward), which
// http.Server.Shutdown neither waits for nor closes: the handler hijacked them. Without them a
// stopping proxy would cut a stream that had seconds left when the process exits, and a proxy
// turned off would go on relaying the streams it had for as long as they last.
//
// A connection counts from its hijacking (the server's ConnState) until it is closed, which
// the listener's connections report: the handler closes the TLS connection, which closes the
// one accepted.
type streams struct {
	mu sync.Mutex
	// open maps each accepted connection that was hijacked to the TLS connection over it, which
	// the handler holds and closeAll closes (with a close_notify alert, not a reset).
	open map[net.Conn]*tls.Conn
	// changed is closed, and replaced, whenever a stream ends.
	changed chan struct{}
}

func newStreams() *streams {
	return &streams{open: map[net.Conn]*tls.Conn{}, changed: make(chan struct{})}
}

// listen wraps ln so that streams learns when each of its connections closes.
func (s *streams) listen(ln net.Listener) net.Listener { return trackingListener{ln, s} }

// connState is the server's ConnState: a hijacked TLS connection becomes a stream.
func (s *streams) connState(c net.Conn, state http.ConnState) {
	if state != http.StateHijacked {
		return
	}
	if tc, ok := c.(*tls.Conn); ok {
		s.mu.Lock()
		s.open[tc.NetConn()] = tc
		s.mu.Unlock()
	}
}

func (s *streams) closed(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.open[c]; ok {
		delete(s.open, c)
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

// count is how many streams are open.
func (s *streams) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// wait returns true once no stream is open, or false when ctx ends first.
func (s *streams) wait(ctx context.Context) bool {
	for {
		s.mu.Lock()
		n, changed := len(s.open), s.changed
		s.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// closeAll closes every open stream's client connection: the client reads a clean end of the
// stream, and the handler, whose copy fails, closes its connection to the kube-apiserver.
func (s *streams) closeAll() {
	s.mu.Lock()
	conns := make([]*tls.Conn, 0, len(s.open))
	for _, tc := range s.open {
		conns = append(conns, tc)
	}
	s.mu.Unlock()
	for _, tc := range conns {
		_ = tc.Close() // safe beside the handler's reads and writes; an error means it is gone
	}
}

type trackingListener struct {
	net.Listener
	streams *streams
}

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &trackedConn{Conn: c, streams: l.streams}, nil
}

type trackedConn struct {
	net.Conn
	streams *streams
	once    sync.Once
}

// CloseWrite half-closes the connection: a stream's connection lingers after its last bytes
// (the impersonator's streamConn), and counts as open until it is closed.
func (c *trackedConn) CloseWrite() error {
	hc, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok {
		return errors.New("the connection cannot be half-closed")
	}
	return hc.CloseWrite()
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.streams.closed(c) })
	return err
}
