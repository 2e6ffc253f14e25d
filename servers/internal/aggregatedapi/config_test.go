package aggregatedapi

import (
	"strings"
	"testing"
)

// The configuration against a real cluster is exercised by the Supervisor's aggregated API test
// (servers/supervisor/apiserver) and the Concierge's integration tests.
func TestRecommendedConfigNeedsACertificate(t *testing.T) {
	_, err := RecommendedConfig(Options{Title: "Pinniped Test"})
	if err == nil || !strings.Contains(err.Error(), "no serving certificate") {
		t.Fatalf("error %v, want one about the missing certificate", err)
	}
}
