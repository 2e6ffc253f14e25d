package localusers

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The results of the reviews counter.
const (
	resultAuthenticated = "authenticated"
	resultRefused       = "refused"
	// resultInvalid is a request that was no TokenReview (wrong method, unreadable body).
	resultInvalid = "invalid"
)

var (
	reviews = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "pinniped",
		Subsystem:      "local_user_authenticator",
		Name:           "token_reviews_total",
		Help:           "TokenReviews answered, by result: authenticated, refused (an unknown user or a wrong password), invalid (not a TokenReview).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	registerOnce sync.Once
)

// RegisterMetrics adds the webhook's metrics to the registry served at MetricsPath, every result
// at zero: rate() over a series born at 1 counts nothing.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(reviews)
		for _, result := range []string{resultAuthenticated, resultRefused, resultInvalid} {
			reviews.WithLabelValues(result)
		}
	})
}
