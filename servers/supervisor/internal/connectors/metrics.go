package connectors

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"sealion.dev/core/tracing"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// The operations a Call records: each a call to the upstream.
const (
	OpPassword = "password" // PasswordConnector.Authenticate
	OpExchange = "exchange" // BrowserConnector.Exchange, the code of a browser login
	OpRefresh  = "refresh"  // RefreshConnector.Refresh
	OpRevoke   = "revoke"   // RevokeConnector.Revoke
)

var (
	upstreamCalls = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "pinniped",
		Subsystem: "supervisor",
		Name:      "upstream_requests_total",
		Help: "Calls to upstream identity providers, by type, operation (password, exchange, refresh, revoke) and result: " +
			"success, refused (the upstream said no: a wrong password, a user gone), unavailable (it could not be reached), error.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"identity_provider_type", "operation", "result"})
	upstreamDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "pinniped",
		Subsystem:      "supervisor",
		Name:           "upstream_request_duration_seconds",
		Help:           "Time an upstream identity provider took to answer, by type and operation.",
		Buckets:        []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		StabilityLevel: metrics.ALPHA,
	}, []string{"identity_provider_type", "operation"})
	registerOnce sync.Once
)

// RegisterMetrics adds the upstream metrics to the registry the Supervisor serves at /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(upstreamCalls, upstreamDuration) })
}

// Call is one call to an upstream, timed for the metrics and, within a recorded trace, a span
// ("upstream password", ...) whose children are the call's HTTP requests.
type Call struct {
	typ, operation string
	start          time.Time
	span           trace.Span
}

// StartCall begins a call to an upstream of type typ; the call is made with the context returned.
func StartCall(ctx context.Context, typ issuer.IdentityProviderType, operation string) (context.Context, Call) {
	t := string(typ)
	if !knownType(typ) {
		t = "unknown"
	}
	ctx, span := tracing.Start(ctx, "upstream "+operation)
	return ctx, Call{typ: t, operation: operation, start: time.Now(), span: span}
}

// End records the call's outcome, err. The span gets the result's name, never the error's text,
// which can quote what a user typed.
func (c Call) End(err error) {
	result := callResult(err)
	upstreamCalls.WithLabelValues(c.typ, c.operation, result).Inc()
	upstreamDuration.WithLabelValues(c.typ, c.operation).Observe(time.Since(c.start).Seconds())
	if c.span.IsRecording() {
		c.span.SetAttributes(attribute.String("pinniped.identity_provider_type", c.typ), attribute.String("pinniped.result", result))
		if err != nil {
			c.span.SetStatus(codes.Error, result)
		}
		c.span.End()
	}
}

func callResult(err error) string {
	var e *Error
	switch {
	case err == nil:
		return "success"
	case errors.As(err, &e) && e.Unavailable:
		return "unavailable"
	case errors.As(err, &e):
		return "refused"
	}
	return "error"
}

func knownType(typ issuer.IdentityProviderType) bool {
	for _, t := range issuer.Types {
		if t == typ {
			return true
		}
	}
	return false
}
