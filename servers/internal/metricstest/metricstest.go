// Package metricstest reads the servers' metrics registry in tests: whether a series is served.
package metricstest

import (
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
)

// HasSeries says whether the registry the servers serve at /metrics has a series of the metric
// name whose labels include want.
func HasSeries(t testing.TB, name string, want map[string]string) bool {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.Metric {
			have := map[string]string{}
			for _, l := range m.Label {
				have[l.GetName()] = l.GetValue()
			}
			matches := true
			for k, v := range want {
				matches = matches && have[k] == v
			}
			if matches {
				return true
			}
		}
	}
	return false
}
