package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// /readyz fails, naming the loader, until every loader has synced, and fails again for good once
// the drain starts.
func TestReadiness(t *testing.T) {
	var upstreams, clients atomic.Bool
	r := &readiness{loaders: []loader{
		{"the upstream identity provider controller", upstreams.Load},
		{"the OIDCClient controller", clients.Load},
	}}
	probe := func() (int, string) {
		rec := httptest.NewRecorder()
		withProbes(http.NotFoundHandler(), r).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		body, _ := io.ReadAll(rec.Body)
		return rec.Code, string(body)
	}
	for _, step := range []struct {
		set      *atomic.Bool
		drain    bool
		code     int
		contains string
	}{
		{nil, false, http.StatusServiceUnavailable, "the upstream identity provider controller has not loaded"},
		{&upstreams, false, http.StatusServiceUnavailable, "the OIDCClient controller has not loaded"},
		{&clients, false, http.StatusOK, "ok"},
		{nil, true, http.StatusServiceUnavailable, "shutting down"},
	} {
		if step.set != nil {
			step.set.Store(true)
		}
		if step.drain {
			r.drain()
		}
		if code, body := probe(); code != step.code || !strings.Contains(body, step.contains) {
			t.Errorf("/readyz: %d %q; want %d with %q", code, body, step.code, step.contains)
		}
	}
}
