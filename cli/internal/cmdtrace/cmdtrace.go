// Package cmdtrace lets a pinniped command join its caller's trace: when the environment holds a
// W3C trace context (TRACEPARENT, and TRACESTATE, OpenTelemetry's names for carrying it in the
// environment), the command's requests to the Supervisor and the Concierge carry it on
// (core/tracing), and servers that trace record their spans in that trace. So one slow login can
// be followed through the servers by its trace ID. The CLI exports no spans of its own: an
// exporter (OTLP, gRPC, protobuf) would double the size of a binary that kubectl runs before
// every request of a logged-in user, and slow every one of them.
package cmdtrace

import (
	"context"

	"go.opentelemetry.io/otel/propagation"

	"sealion.dev/core/tracing"
)

// Join returns ctx within the trace the environment (getenv) names, or ctx when it names none or
// names one malformed.
func Join(ctx context.Context, getenv func(string) string) context.Context {
	return tracing.Propagator().Extract(ctx, envCarrier(getenv))
}

// envCarrier reads TRACEPARENT and TRACESTATE, the environment's names of the W3C headers.
type envCarrier func(string) string

var _ propagation.TextMapCarrier = envCarrier(nil)

func (e envCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return e("TRACEPARENT")
	case "tracestate":
		return e("TRACESTATE")
	}
	return ""
}
func (envCarrier) Set(string, string) {}
func (envCarrier) Keys() []string     { return []string{"traceparent", "tracestate"} }
