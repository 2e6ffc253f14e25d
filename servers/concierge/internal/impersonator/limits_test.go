package impersonator

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/client-go/rest"

	"sealion.dev/servers/internal/fairqueue/floodtest"
)

// limitedProxy is the proxy, for anonymous clients, in front of backend, with the in-flight
// limits of c.
func limitedProxy(t *testing.T, backend http.Handler, c Config) *httptest.Server {
	t.Helper()
	kube := httptest.NewTLSServer(backend)
	t.Cleanup(kube.Close)
	c.APIServer = &rest.Config{Host: kube.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	c.Authenticator = anonymous.NewAuthenticator(nil)
	c.Authorizer = allowAll
	handler, err := New(c)
	require.NoError(t, err)
	front := httptest.NewUnstartedServer(handler)
	front.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	front.StartTLS()
	t.Cleanup(front.Close)
	front.Client().Timeout = 10 * time.Second
	return front
}

func TestInFlightLimit(t *testing.T) {
	// Requests for the blocking path wait at the kube-apiserver until release is closed.
	const blocking = "/api/v1/namespaces/work/configmaps"
	arrived, release := make(chan struct{}, 10), make(chan struct{})
	front := limitedProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == blocking || r.URL.Query().Get("watch") == "true" || strings.HasSuffix(r.URL.Path, "/log") {
			arrived <- struct{}{}
			<-release
		}
		_, _ = io.Copy(io.Discard, r.Body)
	}), Config{MaxRequestsInFlight: 2, MaxMutatingRequestsInFlight: 1, MaxQueueWait: 300 * time.Millisecond})
	var released atomic.Bool
	t.Cleanup(func() {
		if released.CompareAndSwap(false, true) {
			close(release)
		}
	})

	send := func(method, path string) (*http.Response, error) {
		req, err := http.NewRequest(method, front.URL+path, strings.NewReader("{}"))
		if err != nil {
			return nil, err
		}
		resp, err := front.Client().Do(req)
		if err != nil {
			return nil, err
		}
		return resp, resp.Body.Close()
	}
	do := func(method, path string) *http.Response {
		resp, err := send(method, path)
		require.NoError(t, err)
		return resp
	}
	codes := make(chan int, 10)
	inBackground := func(method, path string) {
		go func() {
			resp, err := send(method, path)
			if err != nil {
				codes <- 0
				return
			}
			codes <- resp.StatusCode
		}()
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %s did not reach the kube-apiserver", method, path)
		}
	}
	// Both read slots and the one mutating slot are taken.
	inBackground(http.MethodGet, blocking)
	inBackground(http.MethodGet, blocking)
	inBackground(http.MethodPost, blocking)

	// A third read and a second write wait their turn, and are refused when it does not come.
	resp := do(http.MethodGet, blocking)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "a third read")
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, http.StatusTooManyRequests, do(http.MethodPut, blocking+"/x").StatusCode, "a second write")

	// Long-running requests take no slot: they would starve everyone else.
	inBackground(http.MethodGet, blocking+"?watch=true")
	inBackground(http.MethodGet, "/api/v1/namespaces/work/pods/p/log?follow=true")

	// A read that arrives while the seats are taken is served once one frees up.
	waiting := make(chan int, 1)
	go func() {
		resp, err := send(http.MethodGet, "/api/v1/namespaces/work/configmaps/waiting")
		if err != nil {
			waiting <- 0
			return
		}
		waiting <- resp.StatusCode
	}()
	time.Sleep(100 * time.Millisecond)
	released.Store(true)
	close(release)
	assert.Equal(t, http.StatusOK, <-waiting, "a read that waited for a seat")
	for range 5 {
		assert.Equal(t, http.StatusOK, <-codes)
	}
	assert.Equal(t, http.StatusOK, do(http.MethodGet, blocking).StatusCode, "the slots are free again")
}

// An attacker who floods the proxy from one address fills only that address's queues and is refused
// beyond them at once, before any TokenReview is spent on it, while a user at another address is
// served after a few of the flood's requests: a flood cannot lock others out.
func TestFloodDoesNotLockOthersOut(t *testing.T) {
	recorder := &floodtest.Recorder{}
	front := limitedProxy(t, recorder, Config{MaxMutatingRequestsInFlight: 1})
	floodtest.Attack(t, floodtest.Target{
		Client: func(ip string) *http.Client { return floodtest.ClientFrom(front.Client(), ip) },
		Request: func(path string) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, front.URL+path, strings.NewReader("{}"))
			return r
		},
		Served:    recorder.Served,
		FloodPath: "/api/v1/namespaces/flood/configmaps", UserPath: "/api/v1/namespaces/user/configmaps",
	})
}

func TestRequestBodyLimit(t *testing.T) {
	var received atomic.Int64
	front := limitedProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		received.Store(n)
	}), Config{})

	tests := []struct {
		name     string
		path     string
		size     int64
		chunked  bool // no Content-Length: the limit is found while the body is forwarded
		wantCode int
	}{
		{name: "the largest object the kube-apiserver takes", path: "/api/v1/namespaces/work/configmaps", size: MaxRequestBodyBytes, wantCode: http.StatusOK},
		{name: "one byte more", path: "/api/v1/namespaces/work/configmaps", size: MaxRequestBodyBytes + 1, wantCode: http.StatusRequestEntityTooLarge},
		{name: "one byte more, chunked", path: "/api/v1/namespaces/work/configmaps", size: MaxRequestBodyBytes + 1, chunked: true, wantCode: http.StatusRequestEntityTooLarge},
		{name: "a TokenCredentialRequest", path: "/apis/login.concierge.pinniped.dev/v1alpha1/tokencredentialrequests", size: MaxRequestBodyBytes + 1, wantCode: http.StatusRequestEntityTooLarge},
		// As at the kube-apiserver: a proxied upload to a pod or service is the pod's to judge.
		{name: "the proxy subresource is a stream", path: "/api/v1/namespaces/work/services/s/proxy/upload", size: MaxRequestBodyBytes + 1, chunked: true, wantCode: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			received.Store(-1)
			var body io.Reader = bytes.NewReader(make([]byte, tt.size))
			if tt.chunked {
				body = io.MultiReader(body) // a reader whose length the client cannot know
			}
			req, err := http.NewRequest(http.MethodPost, front.URL+tt.path, body)
			require.NoError(t, err)
			resp, err := front.Client().Do(req)
			require.NoError(t, err)
			msg, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			require.Equal(t, tt.wantCode, resp.StatusCode, "%s", msg)
			if tt.wantCode == http.StatusOK {
				assert.Equal(t, tt.size, received.Load(), "the kube-apiserver got the whole body")
			} else {
				assert.Contains(t, string(msg), `"reason":"RequestEntityTooLarge"`)
			}
			if !tt.chunked && tt.wantCode != http.StatusOK {
				assert.Equal(t, int64(-1), received.Load(), "the request must not reach the kube-apiserver")
			}
		})
	}
}
