package loadbalancer

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// forwarder accepts TCP connections on one address and port and relays each to one of the
// Service's ready endpoints, taken round robin. Connections have no idle timeout (exec sessions
// and watches stay open for hours); TCP keep-alives, on by default for both legs, notice dead peers.
// Changing the endpoints affects new connections only.
type forwarder struct {
	listener    net.Listener
	dialTimeout time.Duration
	logger      klog.Logger

	backends atomic.Pointer[[]string] // "host:port" of every ready endpoint
	next     atomic.Uint64

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // accepted connections, closed by close
	wg     sync.WaitGroup        // the accept loop and one per accepted connection
}

var errNoEndpoints = errors.New("the Service has no ready endpoints")

func startForwarder(logger klog.Logger, addr string, backends []string, dialTimeout time.Duration) (*forwarder, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	f := &forwarder{
		listener:    l,
		dialTimeout: dialTimeout,
		logger:      logger.WithValues("listen", addr),
		conns:       map[net.Conn]struct{}{},
	}
	f.setBackends(backends)
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

func (f *forwarder) setBackends(backends []string) {
	f.backends.Store(&backends)
}

func (f *forwarder) serve() {
	defer f.wg.Done()
	for {
		conn, err := f.listener.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of file descriptors or similar: wait rather than spin.
			f.logger.Error(err, "accepting a connection")
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if !f.track(conn) {
			_ = conn.Close()
			return
		}
		go f.relay(conn)
	}
}

// track records an accepted connection so close can end it; false once the forwarder is closed.
func (f *forwarder) track(conn net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[conn] = struct{}{}
	f.wg.Add(1)
	return true
}

func (f *forwarder) relay(client net.Conn) {
	defer f.wg.Done()
	defer func() {
		f.mu.Lock()
		delete(f.conns, client)
		f.mu.Unlock()
	}()
	defer client.Close()

	backend, err := f.dial()
	if err != nil {
		f.logger.V(2).Info("refusing a connection", "client", client.RemoteAddr().String(), "reason", err.Error())
		return
	}
	defer backend.Close()
	pipe(client, backend)
}

// dial connects to the next endpoint in turn, moving on to the following ones while dialling fails.
func (f *forwarder) dial() (net.Conn, error) {
	backends := *f.backends.Load()
	if len(backends) == 0 {
		return nil, errNoEndpoints
	}
	start := f.next.Add(1) - 1
	var errs []error
	for i := range uint64(len(backends)) {
		addr := backends[(start+i)%uint64(len(backends))]
		conn, err := net.DialTimeout("tcp", addr, f.dialTimeout)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no endpoint accepted the connection: %w", errors.Join(errs...))
}

// pipe copies both ways until both directions have ended. The end of one direction is passed on
// as a half-close, so a peer that stops sending still gets its answer; an error in either
// direction ends both.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	copyHalf := func(dst, src net.Conn) {
		defer wg.Done()
		if _, err := io.Copy(dst, src); err != nil {
			_ = a.Close()
			_ = b.Close()
			return
		}
		if hc, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = hc.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	wg.Add(2)
	go copyHalf(a, b)
	copyHalf(b, a)
	wg.Wait()
}

// close stops listening, ends every relayed connection and waits for them to finish.
func (f *forwarder) close() {
	_ = f.listener.Close()
	f.mu.Lock()
	f.closed = true
	for conn := range f.conns {
		_ = conn.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
