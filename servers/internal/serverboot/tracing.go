package serverboot

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"k8s.io/apimachinery/pkg/util/validation/field"
	basetracing "k8s.io/component-base/tracing"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	baseversion "k8s.io/component-base/version"
)

// Tracing is the tracing key of the Concierge's and the Supervisor's configuration files, with
// the fields of the kube-apiserver's TracingConfiguration (apiserver.config.k8s.io). Absent,
// nothing is traced.
type Tracing struct {
	// Endpoint is the host:port of the OpenTelemetry collector's OTLP/gRPC receiver, reached
	// without TLS (a node-local agent or a sidecar); localhost:4317 by default.
	Endpoint *string `json:"endpoint,omitempty"`
	// SamplingRatePerMillion is how many of every million requests no client traces are traced, 0
	// to 1000000; none by default. A request whose client traces it (a sampled W3C traceparent) is
	// traced whatever the rate.
	SamplingRatePerMillion *int32 `json:"samplingRatePerMillion,omitempty"`
}

// api is t as component-base's tracing takes it.
func (t *Tracing) api() *tracingapi.TracingConfiguration {
	if t == nil {
		return nil
	}
	return &tracingapi.TracingConfiguration{Endpoint: t.Endpoint, SamplingRatePerMillion: t.SamplingRatePerMillion}
}

// ValidateTracing reports what is wrong with the tracing key, as the kube-apiserver does.
func ValidateTracing(t *Tracing) error {
	return tracingapi.ValidateTracingConfiguration(t.api(), nil, field.NewPath("tracing")).ToAggregate()
}

// Tracer is a server's trace exporter, from its tracing key; a nil Tracer exports nothing.
type Tracer struct {
	provider basetracing.TracerProvider
}

// NewTracer exports the spans of service (pinniped-concierge, pinniped-supervisor) as the
// tracing key c says; with no key it exports nothing.
func NewTracer(ctx context.Context, c *Tracing, service string) (*Tracer, error) {
	if c == nil {
		return &Tracer{}, nil
	}
	// The kube-apiserver's way (component-base): the collector's endpoint without TLS (a node-local
	// agent or a sidecar), localhost:4317 when unset; a trace a client started is sampled when the
	// client sampled it, a trace of our own at samplingRatePerMillion (none when unset).
	p, err := basetracing.NewProvider(ctx, c.api(), nil, []resource.Option{
		resource.WithAttributes(semconv.ServiceName(service), semconv.ServiceVersion(baseversion.Get().GitVersion)),
	})
	if err != nil {
		return nil, err
	}
	return &Tracer{provider: p}, nil
}

// Provider is what the server's handlers make spans with: nil when the server does not trace, so
// that they serve as if tracing did not exist.
func (t *Tracer) Provider() basetracing.TracerProvider {
	if t == nil || t.provider == nil {
		return nil
	}
	return t.provider
}

// flushTimeout bounds how long a stopping server waits for the collector to take its last spans.
const flushTimeout = 5 * time.Second

// Flush exports the spans not yet exported, when the server stops.
func (t *Tracer) Flush(ctx context.Context) {
	if t == nil || t.provider == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	_ = t.provider.Shutdown(ctx)
}
