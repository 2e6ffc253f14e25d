package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"

	"sealion.dev/tools/internal/promseries"
)

// board is what the renderer needs of a dashboard.
type board struct {
	title  string
	panels []panelSpec
}

type panelSpec struct {
	kind, title, unit string // kind: row, timeseries or stat
	grid              dashboard.GridPos
	queries           []prometheus.Dataquery
}

// readDashboard decodes a dashboard with Grafana's SDK, its panels and queries as their types.
func readDashboard(file string) (*board, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	b := &board{title: deref(d.Title)}
	for _, p := range d.Panels {
		switch {
		case p.RowPanel != nil && p.RowPanel.GridPos != nil:
			b.panels = append(b.panels, panelSpec{kind: "row", title: deref(p.RowPanel.Title), grid: *p.RowPanel.GridPos})
		case p.Panel != nil && p.Panel.GridPos != nil:
			spec := panelSpec{kind: p.Panel.Type, title: deref(p.Panel.Title), grid: *p.Panel.GridPos}
			if p.Panel.FieldConfig != nil {
				spec.unit = deref(p.Panel.FieldConfig.Defaults.Unit)
			}
			for _, target := range p.Panel.Targets {
				q, ok := target.(*prometheus.Dataquery)
				if !ok {
					return nil, fmt.Errorf("panel %q: a query of type %T, not Prometheus'", spec.title, target)
				}
				spec.queries = append(spec.queries, *q)
			}
			b.panels = append(b.panels, spec)
		}
	}
	if len(b.panels) == 0 {
		return nil, fmt.Errorf("%s: no panels", file)
	}
	return b, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// panel is a panel with the data Grafana would show in it: lines of a time series, or the values
// of a stat at the end of the time range.
type panel struct {
	panelSpec
	lines  []line
	values []value
}

type line struct {
	label  string
	points []promseries.Sample
}

type value struct {
	label string
	v     float64
}

// evaluate runs every query of every panel over the scrapes' time range, one point per scrape,
// as Grafana asks Prometheus.
func evaluate(ctx context.Context, b *board, s *scrapes) ([]panel, error) {
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 10_000_000, Timeout: time.Minute})
	db := promseries.Queryable(s.series)
	step := s.interval
	// The points end at the last scrape, a step apart, as far back as the first: a range that
	// started at the first scrape could end just before the last one and miss it.
	end := s.times[len(s.times)-1]
	start := end.Add(-end.Sub(s.times[0]).Truncate(step))
	rate := s.rateInterval()
	var out []panel
	for _, spec := range b.panels {
		p := panel{panelSpec: spec}
		for _, q := range spec.queries {
			expr := strings.ReplaceAll(q.Expr, "$__rate_interval", fmt.Sprintf("%ds", int(rate.Seconds())))
			legend := deref(q.LegendFormat)
			if deref(q.Instant) {
				v, err := query(ctx, engine, db, expr, end, end, step)
				if err != nil {
					return nil, fmt.Errorf("panel %q: %w", spec.title, err)
				}
				for _, series := range v {
					if n := len(series.points); n > 0 {
						p.values = append(p.values, value{label: legendOf(legend, series.labels), v: series.points[n-1].V})
					}
				}
				continue
			}
			v, err := query(ctx, engine, db, expr, start, end, step)
			if err != nil {
				return nil, fmt.Errorf("panel %q: %w", spec.title, err)
			}
			for _, series := range v {
				p.lines = append(p.lines, line{label: legendOf(legend, series.labels), points: series.points})
			}
		}
		out = append(out, p)
	}
	return out, nil
}

type result struct {
	labels labels.Labels
	points []promseries.Sample
}

func query(ctx context.Context, engine *promql.Engine, db storage.Queryable, expr string, start, end time.Time, step time.Duration) ([]result, error) {
	q, err := engine.NewRangeQuery(ctx, db, nil, expr, start, end, step)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, res.Err
	}
	m, err := res.Matrix()
	if err != nil {
		return nil, err
	}
	var out []result
	for _, series := range m {
		r := result{labels: series.Metric}
		for _, f := range series.Floats {
			if !math.IsNaN(f.F) {
				r.points = append(r.points, promseries.Sample{T: f.T, V: f.F})
			}
		}
		if len(r.points) > 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

var legendLabel = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)

// legendOf fills a legend format's {{label}} from the series' labels, as Grafana does; without
// a format, the labels name the series.
func legendOf(format string, l labels.Labels) string {
	if format == "" {
		return l.String()
	}
	return legendLabel.ReplaceAllStringFunc(format, func(m string) string {
		return l.Get(legendLabel.FindStringSubmatch(m)[1])
	})
}

// latest says, for the summary, what the panel shows: each value of a stat; each series of a
// time series that was ever above zero, with its last value and its peak.
func (p panel) latest() string {
	if p.kind == "row" {
		return "row"
	}
	var parts []string
	for _, v := range p.values {
		parts = append(parts, fmt.Sprintf("%s %s", v.label, formatValue(v.v, p.unit)))
	}
	zero := 0
	for _, l := range p.lines {
		peak := 0.0
		for _, pt := range l.points {
			peak = max(peak, pt.V)
		}
		if peak == 0 {
			zero++
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s (peak %s)", l.label, formatValue(l.points[len(l.points)-1].V, p.unit), formatValue(peak, p.unit)))
	}
	switch {
	case len(parts) == 0 && zero == 0:
		return "no data"
	case len(parts) == 0:
		return fmt.Sprintf("%d series, all at 0", zero)
	}
	return strings.Join(parts, "; ")
}

// formatValue writes v in the panel's Grafana unit.
func formatValue(v float64, unit string) string {
	switch unit {
	case "reqps":
		return fmt.Sprintf("%.3g req/s", v)
	case "s":
		const day = 24 * 3600
		if math.Abs(v) >= 365*day {
			return fmt.Sprintf("%.3g years", v/(365*day))
		}
		if math.Abs(v) >= 2*day {
			return fmt.Sprintf("%.3g days", v/day)
		}
		if math.Abs(v) >= 3600 {
			return fmt.Sprintf("%.3g h", v/3600)
		}
		if math.Abs(v) < 1 {
			return fmt.Sprintf("%.3g ms", v*1000)
		}
		return fmt.Sprintf("%.3g s", v)
	case "percentunit":
		return fmt.Sprintf("%.3g%%", v*100)
	}
	return fmt.Sprintf("%.4g", v)
}
