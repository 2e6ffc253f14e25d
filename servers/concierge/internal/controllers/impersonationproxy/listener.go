package impersonationproxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"sealion.dev/servers/internal/drain"
	"sealion.dev/servers/internal/tlsprofile"
)

// servingCert holds the proxy's current serving certificate; handshakes fail while it is empty.
type servingCert struct {
	cert atomic.Pointer[loadedCert]
}

// loadedCert is a certificate with the PEM it was parsed from, to tell a change from a reload.
type loadedCert struct {
	tls.Certificate
	certPEM, keyPEM []byte
}

// set serves certPEM and keyPEM from the next handshake on, and reports whether they differ from
// what was served before. Connections already open keep the certificate they shook hands with.
func (s *servingCert) set(certPEM, keyPEM []byte) (bool, error) {
	if old := s.cert.Load(); old != nil && bytes.Equal(old.certPEM, certPEM) && bytes.Equal(old.keyPEM, keyPEM) {
		return false, nil
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("loading the impersonation proxy's serving certificate: %w", err)
	}
	s.cert.Store(&loadedCert{Certificate: c, certPEM: bytes.Clone(certPEM), keyPEM: bytes.Clone(keyPEM)})
	return true, nil
}

func (s *servingCert) clear() { s.cert.Store(nil) }

func (s *servingCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.cert.Load(); c != nil {
		return &c.Certificate, nil
	}
	return nil, errors.New("the impersonation proxy has no serving certificate yet")
}

const (
	// shutdownDelay is how long a stopping Concierge's proxy serves new connections: the
	// seconds endpoints take to converge, as for its aggregated API.
	shutdownDelay = 5 * time.Second
	// drainTimeout bounds how long it then waits for the requests and streams in flight; both
	// fit in the pod's termination grace period of 30 seconds.
	drainTimeout = 10 * time.Second
)

// listener starts and stops the proxy's HTTPS server.
type listener struct {
	address string
	handler http.Handler
	cert    *servingCert
	tls     tlsprofile.Profile
	// listen is net.Listen unless a test replaces it.
	listen func(network, address string) (net.Listener, error)
	// drainTimeout is the package's unless a test shortens it.
	drainTimeout time.Duration

	mu      sync.Mutex
	server  *http.Server
	streams *streams
}

func (l *listener) running() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.server != nil
}

// start serves on l.address unless already serving.
func (l *listener) start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.server != nil {
		return nil
	}
	ln, err := l.listen("tcp", l.address)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", l.address, err)
	}
	// Client certificates are requested but verified by the authenticator, which knows both CAs
	// and lets token and anonymous clients in too.
	tlsConfig := l.tls.ServerConfig()
	tlsConfig.ClientAuth = tls.RequestClientCert
	tlsConfig.GetCertificate = l.cert.get
	stopping := make(chan struct{})
	streams := newStreams()
	server := &http.Server{
		Handler:   l.handler,
		TLSConfig: tlsConfig,
		Protocols: l.tls.Protocols(),
		// No timeouts on bodies or responses: watches, logs -f, exec and port-forward stay open
		// as long as the client wants (upgraded connections are no longer the server's to time
		// out). Slow header senders and idle keep-alive connections are cut off, and headers are
		// bounded, as by the kube-apiserver: its limits are 32s, 90s and 1 MiB.
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    1 << 20,
		// Requests do not end with the controller: a stopping proxy lets them finish, and ends
		// its watches cleanly once it stops accepting connections.
		BaseContext: func(net.Listener) context.Context { return drain.WithSignal(context.WithoutCancel(ctx), stopping) },
		ConnState:   streams.connState,
	}
	server.RegisterOnShutdown(func() { close(stopping) })
	l.server, l.streams = server, streams
	go func() {
		err := server.ServeTLS(streams.listen(ln), "", "")
		if !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "impersonation proxy stopped serving")
		}
	}()
	klog.FromContext(ctx).Info("impersonation proxy listening", "address", ln.Addr().String())
	return nil
}

// stop stops serving, if serving. It keeps accepting connections for delay, while the pod
// leaves its Services' endpoints and load balancers follow; then it stops accepting, ends the
// watches it relays at their next event boundary (clients watch again, as when a
// kube-apiserver ends a watch), lets the requests and streams (exec, attach, port-forward) in
// flight finish for up to drainTimeout, and closes the connections still busy: a stream's client
// reads a clean end of it, never a reset, and no stream outlives its proxy.
func (l *listener) stop(ctx context.Context, delay time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.server == nil {
		return
	}
	logger := klog.FromContext(ctx)
	if delay > 0 {
		logger.Info("impersonation proxy stopping: serving new connections a while longer", "delay", delay)
		time.Sleep(delay)
	}
	start := time.Now()
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.drainTimeout)
	defer cancel()
	var requests sync.WaitGroup
	requests.Go(func() {
		if err := l.server.Shutdown(drainCtx); err != nil {
			logger.Info("impersonation proxy stopping: closing the connections still busy", "after", l.drainTimeout)
		}
	})
	if !l.streams.wait(drainCtx) {
		logger.Info("impersonation proxy stopping: closing the streams still open", "streams", l.streams.count(), "after", l.drainTimeout)
		l.streams.closeAll()
	}
	requests.Wait()
	_ = l.server.Close() // the error is that of closing the listener, which is gone either way
	l.server, l.streams = nil, nil
	logger.Info("impersonation proxy stopped", "drained", time.Since(start).Round(time.Millisecond))
}
