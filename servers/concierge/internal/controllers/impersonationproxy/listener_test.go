package impersonationproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"sealion.dev/core/certauthority"
	"sealion.dev/servers/internal/tlsprofile"
)

// The proxy's server cuts off slow and idle clients but never a stream.
func TestListenerServerLimits(t *testing.T) {
	l := &listener{address: "127.0.0.1:0", handler: http.NotFoundHandler(), cert: &servingCert{}, listen: net.Listen}
	ctx := context.Background()
	if err := l.start(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.stop(ctx, 0)
	s := l.server
	if s.ReadHeaderTimeout != 30*time.Second || s.IdleTimeout != 90*time.Second || s.MaxHeaderBytes != 1<<20 {
		t.Errorf("read header timeout %v, idle timeout %v, max header bytes %d; want 30s, 90s and 1 MiB",
			s.ReadHeaderTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
	if s.ReadTimeout != 0 || s.WriteTimeout != 0 {
		t.Errorf("read timeout %v, write timeout %v: watches, exec and logs -f would be cut", s.ReadTimeout, s.WriteTimeout)
	}
}

// tls.onedottwo.allowedCiphers narrows what the proxy accepts in TLS 1.2, and HTTP/2 is left
// out when none of the ciphers it requires remains.
func TestListenerCiphers(t *testing.T) {
	profile, err := tlsprofile.New([]string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"})
	if err != nil {
		t.Fatal(err)
	}
	l, _, addr := servingListener(t, http.NotFoundHandler())
	l.tls = profile
	ctx := context.Background()
	if err := l.start(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.stop(ctx, 0)
	handshake := func(cipher uint16) (string, error) {
		conn, err := tls.Dial("tcp", addr(), &tls.Config{
			InsecureSkipVerify: true, //nolint:gosec // only the cipher is under test
			MaxVersion:         tls.VersionTLS12,
			CipherSuites:       []uint16{cipher},
			NextProtos:         []string{"h2", "http/1.1"},
		})
		if err != nil {
			return "", err
		}
		defer func() { _ = conn.Close() }()
		return conn.ConnectionState().NegotiatedProtocol, nil
	}
	if _, err := handshake(tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256); err == nil {
		t.Error("a cipher left out of the allowed list was accepted")
	}
	proto, err := handshake(tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384)
	if err != nil {
		t.Fatalf("the allowed cipher was refused: %v", err)
	}
	if proto != "http/1.1" {
		t.Errorf("negotiated %q, want http/1.1: HTTP/2 needs an AES-128-GCM cipher", proto)
	}
}

// A stopping proxy serves new connections for the shutdown delay, lets a request in flight finish
// with its context intact, and closes a stream that outlasts the drain; then it is gone.
func TestListenerStopsGracefully(t *testing.T) {
	arrived, release := make(chan struct{}, 2), make(chan struct{})
	ctxErr := make(chan error, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/in-flight":
			arrived <- struct{}{}
			<-release
			ctxErr <- r.Context().Err()
		case "/stream":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			arrived <- struct{}{}
			<-r.Context().Done() // as a watch: until the client or the server ends it
		}
	})
	l, ca, addr := servingListener(t, handler)
	l.drainTimeout = 500 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.start(ctx); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	// A new connection for each request, as from a client the load balancer just sent here.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	get := func(path string) (*http.Response, error) { return client.Get("https://" + addr() + path) }

	inFlight := make(chan error, 1)
	go func() {
		resp, err := get("/in-flight")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		inFlight <- err
	}()
	streamEnded := make(chan error, 1)
	go func() {
		resp, err := get("/stream")
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		streamEnded <- err
	}()
	<-arrived
	<-arrived
	cancel() // the Concierge stops: the controller's context ends, and Run stops the listener
	stopped := make(chan struct{})
	go func() { l.stop(ctx, time.Second); close(stopped) }()
	time.Sleep(200 * time.Millisecond)
	if resp, err := get("/new"); err != nil {
		t.Errorf("a new connection during the shutdown delay: %v; want it served", err)
	} else {
		_ = resp.Body.Close()
	}
	close(release)
	if err := <-ctxErr; err != nil {
		t.Errorf("the request in flight saw its context end with the controller's: %v", err)
	}
	if err := <-inFlight; err != nil {
		t.Errorf("the request in flight: %v", err)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return: the stream kept it waiting past the drain timeout")
	}
	select {
	case <-streamEnded:
	case <-time.After(5 * time.Second):
		t.Error("the stream was not closed by the stop")
	}
	if resp, err := get("/after"); err == nil {
		_ = resp.Body.Close()
		t.Error("the proxy still accepts connections after its stop")
	}
	if l.running() {
		t.Error("the listener reports running after its stop")
	}
}

// A stopping proxy lets an upgraded connection (exec, attach, port-forward) finish within the
// drain timeout, and closes one that goes on with a clean end of the stream, not a reset: the
// server's Shutdown knows nothing of hijacked connections.
func TestListenerDrainsStreams(t *testing.T) {
	const chunk, finiteChunks = "0123456789abcdef", 40
	started := make(chan struct{}, 2)
	handlerDone := make(chan string, 2)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
		_ = buf.Flush()
		started <- struct{}{}
		mode := r.URL.Query().Get("mode")
		defer func() { handlerDone <- mode }()
		for i := 0; mode == "endless" || i < finiteChunks; i++ {
			if _, err := conn.Write([]byte(chunk)); err != nil {
				return // closed by the stop
			}
			time.Sleep(25 * time.Millisecond)
		}
	})
	l, ca, addr := servingListener(t, handler)
	l.drainTimeout = 3 * time.Second
	if err := l.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	type result struct {
		bytes int
		err   error
		at    time.Time
	}
	stream := func(mode string) <-chan result {
		out := make(chan result, 1)
		go func() {
			conn, err := tls.Dial("tcp", addr(), &tls.Config{RootCAs: roots})
			if err != nil {
				out <- result{err: err}
				return
			}
			defer conn.Close()
			fmt.Fprintf(conn, "GET /upgrade?mode=%s HTTP/1.1\r\nHost: proxy\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n", mode)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
				out <- result{err: fmt.Errorf("upgrade: %v %v", resp, err)}
				return
			}
			b, err := io.ReadAll(br)
			out <- result{bytes: len(b), err: err, at: time.Now()}
		}()
		return out
	}
	finite, endless := stream("finite"), stream("endless")
	<-started
	<-started

	begin := time.Now()
	stopped := make(chan time.Time, 1)
	go func() { l.stop(context.Background(), 0); stopped <- time.Now() }()

	f := <-finite
	if f.err != nil || f.bytes != finiteChunks*len(chunk) {
		t.Errorf("the stream that ends within the drain timeout: %d bytes, %v; want all %d, and its end", f.bytes, f.err, finiteChunks*len(chunk))
	}
	var stoppedAt time.Time
	select {
	case stoppedAt = <-stopped:
	case <-time.After(l.drainTimeout + 5*time.Second):
		t.Fatal("stop did not return: a stream kept it waiting past the drain timeout")
	}
	if stoppedAt.Before(f.at) {
		t.Error("stop returned before the stream in flight had ended")
	}
	if took := stoppedAt.Sub(begin); took < l.drainTimeout || took > l.drainTimeout+2*time.Second {
		t.Errorf("stop took %v with a stream open; want the drain timeout, %v", took, l.drainTimeout)
	}
	select {
	case e := <-endless:
		// A TLS close_notify: the client reads the end of the stream, not an error.
		if e.err != nil || e.bytes == 0 {
			t.Errorf("the stream closed by the stop: %d bytes, %v; want a clean end", e.bytes, e.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream still open at the drain timeout outlived the proxy")
	}
	for range 2 {
		select {
		case <-handlerDone:
		case <-time.After(5 * time.Second):
			t.Fatal("a stream's handler still runs after the stop")
		}
	}
	if n := l.running(); n {
		t.Error("the listener reports running after its stop")
	}
}

// servingListener is a listener for handler on a loopback port, serving a certificate for
// 127.0.0.1 from the CA it returns; addr tells where it listens once started.
func servingListener(t *testing.T, handler http.Handler) (l *listener, ca *certauthority.CA, addr func() string) {
	t.Helper()
	ca, err := certauthority.New("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueServingCert("proxy", nil, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var address string
	l = &listener{address: "127.0.0.1:0", handler: handler, cert: &servingCert{}, listen: func(network, a string) (net.Listener, error) {
		ln, err := net.Listen(network, a)
		if err == nil {
			address = ln.Addr().String()
		}
		return ln, err
	}}
	if _, err := l.cert.set(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	return l, ca, func() string { return address }
}
