package server

import (
	"fmt"
	"net/http"
	"sync/atomic"
)

// readiness answers /readyz, which the pod's readiness probe asks: 200 once every loader has
// synced each object it found at start once, until the listeners start draining; 503 naming
// what is missing otherwise. /healthz, the liveness probe's, answers 200 throughout.
//
// A replica that the Services sent requests before it had loaded the FederationDomains would
// answer a logged-in user's refresh with a 404 for an unknown issuer, and one that has not loaded
// the upstreams or OIDCClients with an unknown provider or client. A draining replica answers 503
// so that the endpoints it leaves are no longer chosen by the ones probing it (an ingress, a
// service mesh) during the shutdown delay, while it still serves what arrives.
type readiness struct {
	loaders  []loader
	draining atomic.Bool
}

// loader is a controller whose caches the endpoints serve from.
type loader struct {
	name   string
	synced func() bool
}

// drain makes /readyz fail from now on.
func (r *readiness) drain() { r.draining.Store(true) }

// check returns why the replica is not ready, or nil.
func (r *readiness) check() error {
	if r.draining.Load() {
		return fmt.Errorf("shutting down")
	}
	for _, l := range r.loaders {
		if !l.synced() {
			return fmt.Errorf("%s has not loaded every object yet", l.name)
		}
	}
	return nil
}

func (r *readiness) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := r.check(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, "not ready: %v", err)
		return
	}
	_, _ = w.Write([]byte("ok"))
}
