package credential

import (
	"testing"

	"sealion.dev/core/testing/metricstest"
)

// Every series of the authenticator kinds is served from the start, at zero, so that rate() sees a
// replica's first exchange and its first refusal.
func TestSeriesServedAtZero(t *testing.T) {
	RegisterMetrics()
	for _, kind := range []string{"JWTAuthenticator", "WebhookAuthenticator"} {
		for _, result := range []string{"success", "failure"} {
			if !metricstest.HasSeries(t, "pinniped_concierge_token_credential_requests_total", map[string]string{"authenticator_kind": kind, "result": result}) {
				t.Errorf("no exchanges series for %s %s", kind, result)
			}
		}
		for _, reason := range reasons {
			if !metricstest.HasSeries(t, "pinniped_concierge_token_credential_request_failures_total", map[string]string{"authenticator_kind": kind, "reason": reason}) {
				t.Errorf("no failures series for %s %s", kind, reason)
			}
		}
		if !metricstest.HasSeries(t, "pinniped_concierge_token_credential_request_duration_seconds", map[string]string{"authenticator_kind": kind}) {
			t.Errorf("no latency series for %s", kind)
		}
	}
}
