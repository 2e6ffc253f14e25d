package federationdomain

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	keyGenerated = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "pinniped",
		Subsystem: "supervisor",
		Name:      "signing_key_generated_timestamp_seconds",
		Help: "When the key that signs a FederationDomain's ID tokens was generated, in Unix seconds: its age is " +
			"time() minus this. Deleting the FederationDomain's JWKS Secret replaces the key.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"federation_domain"})
	registerOnce sync.Once
)

// RegisterMetrics adds the key metrics to the registry the Supervisor serves at /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(keyGenerated) })
}

// recordKeys replaces the series with one per FederationDomain whose keys are in place, so that a
// deleted FederationDomain's key leaves the graph with it.
func recordKeys(generated map[string]time.Time) {
	keyGenerated.Reset()
	for name, t := range generated {
		keyGenerated.WithLabelValues(name).Set(float64(t.Unix()))
	}
}
