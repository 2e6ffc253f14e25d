// Package tracing is how the servers and the CLI use OpenTelemetry on the wire: W3C trace context
// and nothing else, client and server spans of HTTP requests, and no span (and no cost) outside a
// trace that is being recorded. Where spans are exported is each program's own choice
// (servers/internal/serverboot, cli/internal/cmdtrace).
//
// A server that is configured to trace continues the trace of a request that carries a sampled
// traceparent, as the kube-apiserver does: that is how one login is followed from the CLI through
// the Supervisor and its upstream to the Concierge. The price is that any client can ask for its
// own requests to be traced; what it makes a server export is bounded by the batch processor's
// queue, which drops spans beyond it.
package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Scope names the spans the servers and the CLI make themselves, around the HTTP spans of otelhttp.
const Scope = "sealion.dev"

// Propagator reads and writes the W3C traceparent and tracestate headers. Not baggage, which the
// Kubernetes components also propagate: a client's baggage would travel on, unread, to every
// upstream a server calls for it.
func Propagator() propagation.TextMapPropagator { return propagation.TraceContext{} }

// Handler makes a server span of each request next serves, named operation until a handler
// names it after its route (span.SetName), continuing the trace the request carries. With no provider (tracing not
// configured) it is next itself: no span, and no trace context passed on.
func Handler(next http.Handler, tp trace.TracerProvider, operation string) http.Handler {
	if tp == nil {
		return next
	}
	return otelhttp.NewHandler(next, operation, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(Propagator()))
}

// Transport makes a client span of each request rt sends within a trace, child of the span in
// the request's context and exported by that span's provider, and passes the trace context on in
// the request's headers. A request outside any trace goes straight to rt.
func Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &transport{next: rt, traced: otelhttp.NewTransport(rt, otelhttp.WithPropagators(Propagator()))}
}

type transport struct {
	next, traced http.RoundTripper
}

// WrappedRoundTripper is the transport underneath, as client-go's wrappers expose theirs
// (k8s.io/apimachinery/pkg/util/net.RoundTripperWrapper).
func (t *transport) WrappedRoundTripper() http.RoundTripper { return t.next }

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(r.Context()).IsValid() {
		return t.next.RoundTrip(r)
	}
	return t.traced.RoundTrip(r)
}

// Start begins a span named name, child of the span recording in ctx, and returns the context
// that carries it. Outside a recorded trace it returns ctx and its (non-recording) span: no
// allocation on the paths that are measured. Attributes go on with span.SetAttributes behind
// span.IsRecording(), whose arguments would allocate otherwise.
func Start(ctx context.Context, name string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name)
}
