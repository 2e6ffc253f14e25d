// Package metricstest reads Prometheus metrics in tests: whether a series with given labels is
// served, by the servers' registry or by a scrape, and sums of series by their labels.
package metricstest

import (
	"bytes"
	"context"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
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

// Parse parses a scrape's Prometheus text into its families, by name.
func Parse(text []byte) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(bytes.NewReader(text))
}

// KubeAPIServer scrapes the kube-apiserver's own /metrics through kube.
func KubeAPIServer(t testing.TB, kube kubernetes.Interface) map[string]*dto.MetricFamily {
	t.Helper()
	text, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("reading the kube-apiserver's metrics: %v", err)
	}
	families, err := Parse(text)
	if err != nil {
		t.Fatalf("parsing the kube-apiserver's metrics: %v", err)
	}
	return families
}

// Sum adds up the series of the family name by the key that key makes of each one's labels,
// leaving out a series for which it returns false. A series counts its value: a counter's, a
// gauge's, or a histogram's sum of observations.
func Sum(families map[string]*dto.MetricFamily, name string, key func(labels map[string]string) (string, bool)) map[string]float64 {
	sums := map[string]float64{}
	for _, m := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if k, ok := key(labels); ok {
			sums[k] += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue() + m.GetHistogram().GetSampleSum()
		}
	}
	return sums
}
