package fairqueue

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	rejected = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "pinniped",
		Name:      "requests_rejected_total",
		Help: "Requests answered 429 by an in-flight limit, by its queue (supervisor-reads, supervisor-writes, " +
			"impersonation-proxy-reads, impersonation-proxy-writes): its queue was full or the request waited too long.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"queue"})
	registerOnce sync.Once
)

// RegisterMetrics adds the limiters' metrics to the registry the server serves at /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(rejected) })
}
