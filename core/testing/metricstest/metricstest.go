// Package metricstest reads Prometheus metrics in tests: whether a series with given labels is
// served, by the servers' registry or by a scrape.
package metricstest

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
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
			if Matches(m, want) {
				return true
			}
		}
	}
	return false
}

// Matches says whether m's labels include want.
func Matches(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.Label {
			found = found || (l.GetName() == k && l.GetValue() == v)
		}
		if !found {
			return false
		}
	}
	return true
}
