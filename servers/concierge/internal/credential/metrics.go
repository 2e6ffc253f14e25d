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
	failures = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "pinniped",
		Subsystem: "concierge",
		Name:      "token_credential_request_failures_total",
		Help: "TokenCredentialRequests refused, by authenticator kind and reason: empty_token, authenticator_error " +
			"(the authenticator could not decide: an issuer or webhook unreachable, a malformed token), not_authenticated, " +
			"unsupported_user (a name or value a certificate cannot carry), reserved_name (system: names), issuer_error.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"authenticator_kind", "reason"})
	registerOnce sync.Once
)

// The reasons of the failures counter: a fixed set, so that its series stay bounded.
const (
	reasonEmptyToken         = "empty_token"
	reasonAuthenticatorError = "authenticator_error"
	reasonNotAuthenticated   = "not_authenticated"
	reasonUnsupportedUser    = "unsupported_user"
	reasonReservedName       = "reserved_name"
	reasonIssuerError        = "issuer_error"
)

var reasons = []string{reasonEmptyToken, reasonAuthenticatorError, reasonNotAuthenticated, reasonUnsupportedUser, reasonReservedName, reasonIssuerError}

// RegisterMetrics adds the exchange metrics to the registry the API server serves at /metrics,
// every series of the authenticator kinds at zero: rate() over a series born at 1 counts nothing,
// so a replica's first exchanges (or first refusals) would never show.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(exchanges, exchangeDuration, failures)
		for _, kind := range []string{"JWTAuthenticator", "WebhookAuthenticator"} {
			exchanges.WithLabelValues(kind, "success")
			exchanges.WithLabelValues(kind, "failure")
			exchangeDuration.WithLabelValues(kind)
			for _, reason := range reasons {
				failures.WithLabelValues(kind, reason)
			}
		}
	})
}

// observe records an exchange; reason is empty for one that succeeded.
func observe(kind, reason string, d time.Duration) {
	result := "success"
	kind = knownKind(kind)
	if reason != "" {
		result = "failure"
		failures.WithLabelValues(kind, reason).Inc()
	}
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
