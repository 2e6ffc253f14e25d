package issuer

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Router is what Endpoints mount their routes on.
type Router interface {
	// Handle serves path, relative to the issuer (for example "/jwks.json"), with h.
	Handle(path string, h http.Handler)
}

// Endpoints are routes served for every issuer.
type Endpoints interface {
	// Mount adds the routes of iss to r.
	Mount(r Router, iss *Issuer)
}

// Mux routes requests to the endpoints of the issuer whose host and path they match. Anything
// else gets what Pinniped's Supervisor answers there, from an http.ServeMux with no routes: 404
// Not Found, or a redirect to the cleaned path when the path has empty, "." or ".." segments.
// It is safe for concurrent use; Set replaces the whole table at once, so a request sees either
// the old or the new issuers, never a mix.
type Mux struct {
	endpoints []Endpoints
	routes    atomic.Pointer[map[string]http.Handler]
	unrouted  *http.ServeMux
}

var _ http.Handler = (*Mux)(nil)

// NewMux returns a Mux with no issuers that mounts endpoints for every issuer it is given.
func NewMux(endpoints ...Endpoints) *Mux {
	m := &Mux{endpoints: endpoints, unrouted: http.NewServeMux()}
	m.routes.Store(&map[string]http.Handler{})
	return m
}

// Set replaces the issuers. Two issuers claiming the same host and path is an error; the first one
// keeps the route, and every other route is still served.
func (m *Mux) Set(issuers []*Issuer) error {
	routes := map[string]http.Handler{}
	var errs []error
	for _, iss := range issuers {
		host, err := iss.hostOf()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r := &issuerRouter{host: host, iss: iss, routes: routes}
		for _, e := range m.endpoints {
			e.Mount(r, iss)
		}
		errs = append(errs, r.errs...)
	}
	m.routes.Store(&routes)
	return errors.Join(errs...)
}

// ServeHTTP serves the endpoint the request's host and path name.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, ok := (*m.routes.Load())[routeKey(r.Host, r.URL.Path)]; ok {
		h.ServeHTTP(w, r)
		return
	}
	m.unrouted.ServeHTTP(w, r)
}

// issuerRouter mounts the routes of one issuer into the table being built.
type issuerRouter struct {
	host   string
	iss    *Issuer
	routes map[string]http.Handler
	errs   []error
}

func (r *issuerRouter) Handle(path string, h http.Handler) {
	key := routeKey(r.host, r.iss.Path(path))
	if _, taken := r.routes[key]; taken {
		r.errs = append(r.errs, fmt.Errorf("FederationDomain %s/%s: the route %s is already served by another issuer", r.iss.Namespace, r.iss.Name, key))
		return
	}
	r.routes[key] = traced(h, path, r.iss.Name)
}

// traced names the request's span after the route, relative to the issuer, and the
// FederationDomain: span names stay as few as the routes, whatever paths clients send.
func traced(h http.Handler, route, federationDomain string) http.Handler {
	fd := attribute.String("pinniped.federation_domain", federationDomain)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// Behind IsRecording: the name and the attribute would allocate on every request.
		if span := trace.SpanFromContext(req.Context()); span.IsRecording() {
			span.SetName(method(req.Method) + " " + route)
			span.SetAttributes(fd)
		}
		h.ServeHTTP(w, req)
	})
}

// method is a request's method, or _OTHER for one outside HTTP's own, as OpenTelemetry's
// conventions name it.
func method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "_OTHER"
}
