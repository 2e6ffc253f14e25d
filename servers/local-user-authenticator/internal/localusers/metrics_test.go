package localusers

import (
	"testing"

	"sealion.dev/core/testing/metricstest"
)

// Every result is served from the start, at zero, so that rate() sees the first review.
func TestResultsServedAtZero(t *testing.T) {
	RegisterMetrics()
	for _, result := range []string{resultAuthenticated, resultRefused, resultInvalid} {
		if !metricstest.HasSeries(t, "pinniped_local_user_authenticator_token_reviews_total", map[string]string{"result": result}) {
			t.Errorf("no series for %s", result)
		}
	}
}
