package aggregatedapi

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// The configuration against a real cluster is exercised by the Supervisor's aggregated API test
// (servers/supervisor/apiserver) and the Concierge's integration tests.
func TestRecommendedConfigNeedsACertificate(t *testing.T) {
	_, err := RecommendedConfig(Options{Title: "Pinniped Test"})
	if err == nil || !strings.Contains(err.Error(), "no serving certificate") {
		t.Fatalf("error %v, want one about the missing certificate", err)
	}
}

// The limits are ours, whatever the library's defaults become.
func TestLimits(t *testing.T) {
	c := genericapiserver.NewConfig(serializer.NewCodecFactory(runtime.NewScheme()))
	limit(c)
	if c.MaxRequestsInFlight != 400 || c.MaxMutatingRequestsInFlight != 200 || c.RequestTimeout != time.Minute || c.MaxRequestBodyBytes != 1<<20 {
		t.Errorf("in flight %d and %d, request timeout %v, body %d bytes; want 400 and 200, 1m and 1 MiB",
			c.MaxRequestsInFlight, c.MaxMutatingRequestsInFlight, c.RequestTimeout, c.MaxRequestBodyBytes)
	}
	if c.ShutdownDelayDuration != 5*time.Second {
		t.Errorf("shutdown delay %v, want 5s", c.ShutdownDelayDuration)
	}
}
