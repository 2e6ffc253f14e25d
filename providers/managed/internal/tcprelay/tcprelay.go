// Package tcprelay is the data path shared by the simulated cloud load balancer and the simulated
// ingress controller of the managed clusters: a TCP server that hands each accepted connection to
// a handler and ends them all on Close, round-robin dialling of a Service's ready endpoints (read
// from its EndpointSlices), and the two-way copy between client and endpoint.
//
// Relayed connections have no idle timeout, since exec sessions and watches stay open for hours;
// TCP keep-alives, on by default for both legs in Go, notice dead peers.
package tcprelay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// Server accepts TCP connections on one address and runs a handler for each; the connection is
// closed when the handler returns.
type Server struct {
	listener net.Listener
	handle   func(net.Conn)
	logger   klog.Logger

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // accepted connections, closed by Close
	wg     sync.WaitGroup        // the accept loop and one per accepted connection
}

// Listen starts serving addr ("host:port") with handle; logger reports accept errors.
func Listen(logger klog.Logger, addr string, handle func(net.Conn)) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	s := &Server{
		listener: l,
		handle:   handle,
		logger:   logger,
		conns:    map[net.Conn]struct{}{},
	}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		conn, err := s.listener.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of file descriptors or similar: wait rather than spin.
			s.logger.Error(err, "accepting a connection")
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if !s.track(conn) {
			_ = conn.Close()
			return
		}
		go s.run(conn)
	}
}

// track records an accepted connection so Close can end it; false once the server is closed.
func (s *Server) track(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[conn] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) run(conn net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
	}()
	defer conn.Close()
	s.handle(conn)
}

// Close stops listening, ends every accepted connection and waits for the handlers to return.
func (s *Server) Close() {
	_ = s.listener.Close()
	s.mu.Lock()
	s.closed = true
	for conn := range s.conns {
		_ = conn.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Endpoints is the changing set of "host:port" addresses one Service port is served by, dialled
// round robin. Changing the set affects new connections only.
type Endpoints struct {
	addrs atomic.Pointer[[]string]
	next  atomic.Uint64
}

// ErrNoEndpoints is Dial's error when the set is empty.
var ErrNoEndpoints = errors.New("the Service has no ready endpoints")

// NewEndpoints returns a set holding addrs.
func NewEndpoints(addrs []string) *Endpoints {
	e := &Endpoints{}
	e.Set(addrs)
	return e
}

// Set replaces the addresses.
func (e *Endpoints) Set(addrs []string) { e.addrs.Store(&addrs) }

// Dial connects to the next address in turn, moving on to the following ones while dialling fails;
// timeout bounds each attempt.
func (e *Endpoints) Dial(timeout time.Duration) (net.Conn, error) {
	addrs := *e.addrs.Load()
	if len(addrs) == 0 {
		return nil, ErrNoEndpoints
	}
	start := e.next.Add(1) - 1
	var errs []error
	for i := range uint64(len(addrs)) {
		addr := addrs[(start+i)%uint64(len(addrs))]
		conn, err := net.DialTimeout("tcp", addr, timeout)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no endpoint accepted the connection: %w", errors.Join(errs...))
}

// Pipe copies both ways until both directions have ended. The end of one direction is passed on
// as a half-close, so a peer that stops sending still gets its answer; an error in either
// direction ends both.
func Pipe(a, b net.Conn) {
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

// ReadyEndpoints maps each port name of a Service's EndpointSlices (the name of the Service port
// it serves) to the sorted "IP:port" of every ready endpoint.
func ReadyEndpoints(endpointSlices []*discoveryv1.EndpointSlice) map[string][]string {
	out := map[string][]string{}
	for _, slice := range endpointSlices {
		if slice.AddressType != discoveryv1.AddressTypeIPv4 && slice.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		for _, port := range slice.Ports {
			if port.Port == nil || ptr.Deref(port.Protocol, corev1.ProtocolTCP) != corev1.ProtocolTCP {
				continue
			}
			name := ptr.Deref(port.Name, "")
			for _, ep := range slice.Endpoints {
				// Ready unset means ready; the addresses of one endpoint are interchangeable and
				// consumers use the first, as kube-proxy does.
				if !ptr.Deref(ep.Conditions.Ready, true) || len(ep.Addresses) == 0 {
					continue
				}
				out[name] = append(out[name], net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*port.Port))))
			}
		}
	}
	for name, addrs := range out {
		slices.Sort(addrs)
		out[name] = slices.Compact(addrs)
	}
	return out
}
