package sessions

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	gcRuns = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "pinniped",
		Subsystem:      "supervisor",
		Name:           "session_garbage_collections_total",
		Help:           "Sweeps of the session storage's garbage collector (on the leading replica), by result: success, or failure (some record could not be listed or deleted; the next sweep tries again).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	gcCollected = metrics.NewCounter(&metrics.CounterOpts{
		Namespace:      "pinniped",
		Subsystem:      "supervisor",
		Name:           "session_records_collected_total",
		Help:           "Expired session records (Secrets) the garbage collector deleted.",
		StabilityLevel: metrics.ALPHA,
	})
	gcDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace:      "pinniped",
		Subsystem:      "supervisor",
		Name:           "session_garbage_collection_duration_seconds",
		Help:           "Time a sweep of the garbage collector took.",
		Buckets:        []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300},
		StabilityLevel: metrics.ALPHA,
	})
	liveRecords = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "pinniped",
		Subsystem: "supervisor",
		Name:      "session_records",
		Help: "Session records (Secrets) not yet expired, by storage type, as the leading replica's last complete sweep found them: " +
			"oidc counts logins, refresh-token their current and retired refresh tokens.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"type"})
	registerOnce sync.Once
)

// recordTypes are the storage types the live records are counted by: ours only, so that another
// Secret's labels cannot add series.
var recordTypes = []string{typeAuthcode, typeAccessToken, typeRefreshToken, typePKCE, typeOIDC, typeDevice}

// RegisterMetrics adds the session storage's metrics to the registry the Supervisor serves at /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(gcRuns, gcCollected, gcDuration, liveRecords) })
}

// observeSweep records a sweep: its result, what it deleted, and, when it listed every record,
// the live records of each type.
func observeSweep(start time.Time, deleted int, live map[string]int, complete bool, err error) {
	result := "success"
	if err != nil {
		result = "failure"
	}
	gcRuns.WithLabelValues(result).Inc()
	gcCollected.Add(float64(deleted))
	gcDuration.Observe(time.Since(start).Seconds())
	if complete {
		// Every type, those without a record at 0: a graph shows none, not a gap.
		for _, typ := range recordTypes {
			liveRecords.WithLabelValues(typ).Set(float64(live[typ]))
		}
	}
}
