package credential

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	exchanges = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "pinniped",
		Subsystem:      "concierge",
		Name:           "token_credential_requests_total",
		Help:           "TokenCredentialRequests handled, by authenticator kind and result (success or failure).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"authenticator_kind", "result"})
	exchangeDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "pinniped",
		Subsystem:      "concierge",
		Name:           "token_credential_request_duration_seconds",
		Help:           "Time to authenticate a token and issue a credential, by authenticator kind.",
		Buckets:        []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1},
		StabilityLevel: metrics.ALPHA,
	}, []string{"authenticator_kind"})
	registerOnce sync.Once
)

// RegisterMetrics adds the exchange metrics to the registry the API server serves at /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(exchanges, exchangeDuration)
	})
}

func observe(kind string, err error, d time.Duration) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	kind = knownKind(kind)
	exchanges.WithLabelValues(kind, result).Inc()
	exchangeDuration.WithLabelValues(kind).Observe(d.Seconds())
}

// knownKind bounds the label's values: the kind comes from the request and must not grow the series.
func knownKind(kind string) string {
	switch kind {
	case "JWTAuthenticator", "WebhookAuthenticator":
		return kind
	}
	return "unknown"
}
