// Package authnmetrics counts (and, within a trace, records as spans) the requests authenticators make while serving logins to the
// services they trust (a JWTAuthenticator's issuer key set, a WebhookAuthenticator's endpoint), so
// that an issuer or a webhook failing shows on a graph before users report it.
package authnmetrics

import (
	"net/http"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"sealion.dev/core/tracing"
)

// The kinds of authenticator, as the exchange metrics of the credential package name them.
const (
	KindJWT     = "JWTAuthenticator"
	KindWebhook = "WebhookAuthenticator"
)

var (
	requests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "pinniped",
		Subsystem: "concierge",
		Name:      "authenticator_upstream_requests_total",
		Help: "Requests authenticators made while serving exchanges, by authenticator kind (JWTAuthenticator: " +
			"its issuer's key set, fetched when a token names a key not yet known; WebhookAuthenticator: a " +
			"TokenReview) and result: success, error (the service could not be reached or answered other than 2xx).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"authenticator_kind", "result"})
	registerOnce sync.Once
)

// RegisterMetrics adds the counter to the registry the Concierge serves at /metrics, with every
// series at zero: a rate over a series that has not appeared yet would hide the first errors.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(requests)
		for _, kind := range []string{KindJWT, KindWebhook} {
			for _, result := range []string{"success", "error"} {
				requests.WithLabelValues(kind, result)
			}
		}
	})
}

// Transport counts each request rt makes for an authenticator of the given kind; within a
// recorded trace (an exchange's) each request is a span too, and the issuer or webhook gets the
// trace context.
func Transport(kind string, rt http.RoundTripper) http.RoundTripper {
	return counted{kind: kind, next: tracing.Transport(rt)}
}

type counted struct {
	kind string
	next http.RoundTripper
}

func (c counted) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	result := "success"
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		result = "error"
	}
	requests.WithLabelValues(c.kind, result).Inc()
	return resp, err
}
