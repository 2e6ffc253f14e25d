package connectors

import (
	"errors"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"sealion.dev/servers/supervisor/internal/issuer"
)

// The operations Observe records: each a call to the upstream.
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

// Observe records a call to an upstream of type typ that started at start and ended with err.
func Observe(typ issuer.IdentityProviderType, operation string, start time.Time, err error) {
	t := string(typ)
	if !knownType(typ) {
		t = "unknown"
	}
	upstreamCalls.WithLabelValues(t, operation, callResult(err)).Inc()
	upstreamDuration.WithLabelValues(t, operation).Observe(time.Since(start).Seconds())
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
