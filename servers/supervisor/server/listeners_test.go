package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The listeners bound what a client may send and how many requests they serve at once.
func TestListenerLimits(t *testing.T) {
	c, _ := testConfig(t, minimalFile+`endpoints:
  https: {network: disabled}
  http: {network: tcp, address: "127.0.0.1:0"}
`)
	c.MaxRequestsInFlight, c.MaxMutatingRequestsInFlight = 1, 1
	c.ShutdownDelay = time.Millisecond
	arrived, release := make(chan struct{}, 2), make(chan struct{})
	listeners, err := c.Complete().listen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			arrived <- struct{}{}
			<-release
		}
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(listeners) != 1 {
		t.Fatalf("%d listeners, want the http one", len(listeners))
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	listeners[0].serve(ctx, errc)
	defer func() {
		cancel()
		<-errc
	}()
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
	want(http.MethodGet, "/healthz", nil, http.StatusOK)
	close(release)
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
	}), nil)
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
	cancel()
	time.Sleep(100 * time.Millisecond)
	if code, err := get("/new"); err != nil || code != http.StatusOK {
		t.Errorf("a new connection right after the stop: %d, %v; want it served during the shutdown delay", code, err)
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
