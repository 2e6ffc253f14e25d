// Package promseries serves float series held in memory to Prometheus' query engine: what the
// alert rules' checks and the dashboard renderer evaluate PromQL on. Prometheus' own test storage
// (its TSDB) would build half of its remote write clients into the tools.
package promseries

import (
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// Sample is one float sample: milliseconds since the epoch and a value.
type Sample struct {
	T int64
	V float64
}

// Series is one series: its labels, the metric name among them, and its samples in time order.
type Series struct {
	Labels  labels.Labels
	Samples []Sample
}

// Queryable serves series; selectors match them by their labels.
func Queryable(series []Series) storage.Queryable {
	all := make([]storage.Series, 0, len(series))
	for _, s := range series {
		samples := make([]chunks.Sample, len(s.Samples))
		for i, x := range s.Samples {
			samples[i] = floatSample{x}
		}
		all = append(all, storage.NewListSeries(s.Labels, samples))
	}
	// The engine merges selected series in label order.
	slices.SortFunc(all, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	return &storage.MockQueryable{MockQuerier: &storage.MockQuerier{
		SelectMockFunction: func(_ bool, _ *storage.SelectHints, matchers ...*labels.Matcher) storage.SeriesSet {
			var selected []storage.Series
			for _, s := range all {
				if matchAll(s.Labels(), matchers) {
					selected = append(selected, s)
				}
			}
			return &seriesSet{series: selected, i: -1}
		},
	}}
}

func matchAll(l labels.Labels, matchers []*labels.Matcher) bool {
	for _, m := range matchers {
		if !m.Matches(l.Get(m.Name)) {
			return false
		}
	}
	return true
}

// seriesSet iterates a slice of series.
type seriesSet struct {
	series []storage.Series
	i      int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *seriesSet) At() storage.Series                { return s.series[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

// floatSample is a Sample as the storage hands it to the engine.
type floatSample struct{ s Sample }

func (s floatSample) T() int64                      { return s.s.T }
func (s floatSample) ST() int64                     { return 0 }
func (s floatSample) F() float64                    { return s.s.V }
func (s floatSample) H() *histogram.Histogram       { return nil }
func (s floatSample) FH() *histogram.FloatHistogram { return nil }
func (s floatSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s floatSample) Copy() chunks.Sample           { return s }
