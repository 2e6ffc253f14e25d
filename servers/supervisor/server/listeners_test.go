package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"sealion.dev/core/certauthority"
	"sealion.dev/servers/internal/fairqueue/floodtest"
)

// The listeners bound what a client may send and how many requests they execute at once; a
// request beyond that waits its turn, and is refused only once it has waited too long.
func TestListenerLimits(t *testing.T) {
	c, _ := testConfig(t, minimalFile+`endpoints:
  https: {network: disabled}
  http: {network: tcp, address: "127.0.0.1:0"}
`)
	c.MaxRequestsInFlight, c.MaxMutatingRequestsInFlight = 1, 1
	c.MaxQueueWait = 300 * time.Millisecond
	c.ShutdownDelay = time.Millisecond
	arrived, release := make(chan struct{}, 2), make(chan struct{})
	listeners, err := c.Complete().listen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			arrived <- struct{}{}
			<-release
		}
	}), nil, &readiness{})
	if err != nil {
		t.Fatal(err)
	}
	if len(listeners) != 1 {
		t.Fatalf("%d listeners, want the http one", len(listeners))
	}
	serveUntilCleanup(t, listeners[0])
	url := "http://" + listeners[0].ln.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}
	send := func(method, path string, header http.Header) (int, error) {
		req, err := http.NewRequest(method, url+path, nil)
		if err != nil {
			return 0, err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	want := func(method, path string, header http.Header, code int) {
		t.Helper()
		got, err := send(method, path, header)
		if err != nil || got != code {
			t.Errorf("%s %s: %d, %v; want %d", method, path, got, err, code)
		}
	}

	// net/http lets a few kilobytes more through than it is told.
	want(http.MethodGet, "/", http.Header{"Cookie": {strings.Repeat("x", 60<<10)}}, http.StatusOK)
	want(http.MethodGet, "/", http.Header{"Cookie": {strings.Repeat("x", 100<<10)}}, http.StatusRequestHeaderFieldsTooLarge)

	codes := make(chan int, 2)
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		go func() {
			code, _ := send(method, "/block", nil)
			codes <- code
		}()
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatalf("%s /block did not arrive", method)
		}
	}
	want(http.MethodGet, "/", nil, http.StatusTooManyRequests)
	want(http.MethodPost, "/token", nil, http.StatusTooManyRequests)
	// A refused request has its audit ID too, for the user's report of it.
	if resp, err := client.Get(url + "/"); err != nil || resp.StatusCode != http.StatusTooManyRequests || !uuidPattern.MatchString(resp.Header.Get("Audit-ID")) {
		t.Errorf("refused GET: %v, %v; want 429 with an Audit-ID", resp, err)
	} else {
		_ = resp.Body.Close()
	}
	want(http.MethodGet, "/healthz", nil, http.StatusOK)
	want(http.MethodGet, "/readyz", nil, http.StatusOK)
	// A request that arrives while every seat is taken is served once one frees up.
	waiting := make(chan int, 1)
	go func() {
		code, _ := send(http.MethodGet, "/waiting", nil)
		waiting <- code
	}()
	time.Sleep(100 * time.Millisecond)
	close(release)
	if code := <-waiting; code != http.StatusOK {
		t.Errorf("a request that waited for a seat ended with %d, want 200", code)
	}
	for range 2 {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a blocked request ended with %d", code)
		}
	}
	want(http.MethodPost, "/token", nil, http.StatusOK)
}

// A stopping listener keeps accepting connections for the shutdown delay, while the pod leaves
// the endpoints, and lets a request in flight finish with its context intact.
func TestListenerStopsGracefully(t *testing.T) {
	c, _ := testConfig(t, minimalFile+`endpoints:
  https: {network: disabled}
  http: {network: tcp, address: "127.0.0.1:0"}
`)
	c.ShutdownDelay, c.ShutdownTimeout = 2*time.Second, 5*time.Second
	arrived, release := make(chan struct{}), make(chan struct{})
	ctxErr := make(chan error, 1)
	listeners, err := c.Complete().listen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/in-flight" {
			close(arrived)
			<-release
			ctxErr <- r.Context().Err()
		}
	}), nil, &readiness{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	listeners[0].serve(ctx, errc)
	url := "http://" + listeners[0].ln.Addr().String()
	get := func(path string) (int, error) {
		// A new connection for each request, as from a client the load balancer just sent here.
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get(url + path)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	inFlight := make(chan error, 1)
	go func() {
		code, err := get("/in-flight")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("status %d", code)
		}
		inFlight <- err
	}()
	<-arrived
	if code, err := get("/readyz"); err != nil || code != http.StatusOK {
		t.Errorf("/readyz before the stop: %d, %v; want 200", code, err)
	}
	cancel()
	time.Sleep(100 * time.Millisecond)
	if code, err := get("/new"); err != nil || code != http.StatusOK {
		t.Errorf("a new connection right after the stop: %d, %v; want it served during the shutdown delay", code, err)
	}
	if code, err := get("/readyz"); err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("/readyz right after the stop: %d, %v; want 503, so that whatever probes it stops sending here", code, err)
	}
	if code, err := get("/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz right after the stop: %d, %v; want 200: the process is alive", code, err)
	}
	close(release)
	if err := <-ctxErr; err != nil {
		t.Errorf("the request in flight saw its context end with the stop: %v", err)
	}
	if err := <-inFlight; err != nil {
		t.Errorf("the request in flight: %v", err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("the listener stopped with %v, want a clean stop", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the listener did not stop")
	}
	if _, err := get("/after"); err == nil {
		t.Error("the listener still accepts connections after its shutdown")
	}
}

// tls.onedottwo.allowedCiphers narrows what the HTTPS listener accepts in TLS 1.2, and HTTP/2 is
// left out when none of the ciphers it requires remains.
func TestHTTPSListenerCiphers(t *testing.T) {
	c, _ := testConfig(t, minimalFile+`endpoints:
  https: {network: tcp, address: "127.0.0.1:0"}
tls:
  onedottwo:
    allowedCiphers: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]
`)
	ca, err := certauthority.New("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueServingCert("supervisor", nil, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	listeners, err := c.Complete().listen(http.NotFoundHandler(), func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }, &readiness{})
	if err != nil {
		t.Fatal(err)
	}
	serveUntilCleanup(t, listeners[0])
	handshake := func(cipher uint16) (string, error) {
		conn, err := tls.Dial("tcp", listeners[0].ln.Addr().String(), &tls.Config{
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

// An attacker who floods the listeners from one address fills only that address's queues and is
// refused beyond them at once, while a user at another address is served after a few of the
// flood's requests, not behind its whole backlog: a flood cannot lock others out.
func TestListenerFloodDoesNotLockOthersOut(t *testing.T) {
	c, _ := testConfig(t, minimalFile+`endpoints:
  https: {network: disabled}
  http: {network: tcp, address: "127.0.0.1:0"}
`)
	c.MaxMutatingRequestsInFlight = 1
	recorder := &floodtest.Recorder{}
	listeners, err := c.Complete().listen(recorder, nil, &readiness{})
	if err != nil {
		t.Fatal(err)
	}
	serveUntilCleanup(t, listeners[0])
	url := "http://" + listeners[0].ln.Addr().String()
	floodtest.Attack(t, floodtest.Target{
		Client: func(ip string) *http.Client { return floodtest.ClientFrom(http.DefaultClient, ip) },
		Request: func(path string) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader("grant_type=x"))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		},
		Served:    recorder.Served,
		FloodPath: "/flood/oauth2/token", UserPath: "/user/oauth2/token",
	})
}

// serveUntilCleanup serves l until the test ends, then stops it and waits for it.
func serveUntilCleanup(t *testing.T, l *listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	l.serve(ctx, errc)
	t.Cleanup(func() {
		cancel()
		<-errc
	})
}
