package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"sealion.dev/tools/internal/promseries"
)

// scrapes are the series of a folder of scrapes, as Prometheus would have stored them.
type scrapes struct {
	series []promseries.Series
	// times are the scrape times, in order; interval is the usual time between two.
	times    []time.Time
	interval time.Duration
}

// readScrapes reads dir's UNIXMILLIS-POD.txt files. Each series gets the label pod, as a
// ServiceMonitor's target labels give it, so that the pods' series stay apart.
func readScrapes(dir string) (*scrapes, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	byKey := map[string]*promseries.Series{}
	var keys []string
	add := func(lbls labels.Labels, t int64, v float64) {
		k := lbls.String()
		s, ok := byKey[k]
		if !ok {
			s = &promseries.Series{Labels: lbls}
			byKey[k] = s
			keys = append(keys, k)
		}
		s.Samples = append(s.Samples, promseries.Sample{T: t, V: v})
	}
	times := map[int64]bool{}
	slices.Sort(files) // by time: the names start with it, all of the same length
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".txt")
		millis, pod, ok := strings.Cut(base, "-")
		t, err := strconv.ParseInt(millis, 10, 64)
		if !ok || err != nil || pod == "" {
			return nil, fmt.Errorf("%s: not named UNIXMILLIS-POD.txt", f)
		}
		times[t] = true
		body, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(body)
		body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for name, family := range families {
			for _, m := range family.Metric {
				for _, s := range samplesOf(name, family.GetType(), m) {
					b := labels.NewBuilder(labels.EmptyLabels())
					for _, l := range m.Label {
						b.Set(l.GetName(), l.GetValue())
					}
					for k, v := range s.extra {
						b.Set(k, v)
					}
					b.Set(labels.MetricName, s.name)
					b.Set("pod", pod)
					add(b.Labels(), t, s.value)
				}
			}
		}
	}
	if len(times) < 2 {
		return nil, fmt.Errorf("%d scrapes in %s: a rate needs two at least", len(times), dir)
	}
	r := &scrapes{}
	for _, k := range keys {
		r.series = append(r.series, *byKey[k])
	}
	var millis []int64
	for t := range times {
		millis = append(millis, t)
	}
	slices.Sort(millis)
	var gaps []int64
	for i, t := range millis {
		r.times = append(r.times, time.UnixMilli(t))
		if i > 0 {
			gaps = append(gaps, t-millis[i-1])
		}
	}
	slices.Sort(gaps)
	r.interval = (time.Duration(gaps[len(gaps)/2]) * time.Millisecond).Round(time.Second)
	return r, nil
}

// sample is one stored series of a scraped metric: a histogram gives its buckets, sum and count.
type sample struct {
	name  string
	extra map[string]string
	value float64
}

func samplesOf(name string, typ dto.MetricType, m *dto.Metric) []sample {
	switch typ {
	case dto.MetricType_COUNTER:
		return []sample{{name: name, value: m.GetCounter().GetValue()}}
	case dto.MetricType_GAUGE:
		return []sample{{name: name, value: m.GetGauge().GetValue()}}
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		out := []sample{{name: name + "_sum", value: h.GetSampleSum()}, {name: name + "_count", value: float64(h.GetSampleCount())}}
		for _, b := range h.Bucket {
			out = append(out, sample{name: name + "_bucket", extra: map[string]string{"le": formatLe(b.GetUpperBound())}, value: float64(b.GetCumulativeCount())})
		}
		// The text format may leave out +Inf; Prometheus stores it, and histogram_quantile needs it.
		if len(h.Bucket) == 0 || !math.IsInf(h.Bucket[len(h.Bucket)-1].GetUpperBound(), 1) {
			out = append(out, sample{name: name + "_bucket", extra: map[string]string{"le": "+Inf"}, value: float64(h.GetSampleCount())})
		}
		return out
	case dto.MetricType_SUMMARY:
		s := m.GetSummary()
		out := []sample{{name: name + "_sum", value: s.GetSampleSum()}, {name: name + "_count", value: float64(s.GetSampleCount())}}
		for _, q := range s.Quantile {
			out = append(out, sample{name: name, extra: map[string]string{"quantile": strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64)}, value: q.GetValue()})
		}
		return out
	default:
		return []sample{{name: name, value: m.GetUntyped().GetValue()}}
	}
}

// formatLe writes a bucket's bound as Prometheus' scrape does.
func formatLe(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// rateInterval is Grafana's $__rate_interval, max($__interval + scrape interval, 4 x scrape
// interval), for panels whose step ($__interval) is the scrape interval: four intervals.
func (s *scrapes) rateInterval() time.Duration {
	return 4 * s.interval
}
