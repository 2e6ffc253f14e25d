package main

import (
	"cmp"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// A curve is a figure measured along a numeric sub-benchmark part, the last one of its name
// ("BenchmarkProxyGET/path=proxy/clients=32": clients), one series for each value of its other
// parts (path=proxy, path=direct), so that the proxy and the direct path share one plot.
type curve struct {
	title, x, unit string
	series         []series
	file           string // the PNG, once plotted
}

type series struct {
	label  string
	points []point
}

type point struct{ x, y float64 }

var numericPart = regexp.MustCompile(`^([^=/]+)=([0-9]+(?:\.[0-9]+)?)$`)

// curvesOf finds the curves among current's figures; a curve needs three points or more.
func curvesOf(current *figures) []curve {
	byPlot := map[string]*curve{}
	var order []string
	for _, k := range current.order {
		parts := strings.Split(k.name, "/")
		last := len(parts) - 1
		m := numericPart.FindStringSubmatch(parts[last])
		if last == 0 || m == nil {
			continue
		}
		x, _ := strconv.ParseFloat(m[2], 64)
		id := parts[0] + " " + m[1] + " " + k.unit
		c, ok := byPlot[id]
		if !ok {
			c = &curve{title: parts[0], x: m[1], unit: k.unit}
			byPlot[id] = c
			order = append(order, id)
		}
		label := strings.Join(parts[1:last], "/")
		i := slices.IndexFunc(c.series, func(s series) bool { return s.label == label })
		if i < 0 {
			c.series = append(c.series, series{label: label})
			i = len(c.series) - 1
		}
		c.series[i].points = append(c.series[i].points, point{x, median(current.values[k])})
	}
	var out []curve
	for _, id := range order {
		c := byPlot[id]
		n := 0
		for i := range c.series {
			slices.SortFunc(c.series[i].points, func(a, b point) int { return cmp.Compare(a.x, b.x) })
			n = max(n, len(c.series[i].points))
		}
		if n >= 3 {
			out = append(out, *c)
		}
	}
	return out
}

// plot draws c as a PNG in dir, with a logarithmic x axis where x spans two decades or more.
func (c *curve) plot(dir string) error {
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = c.x
	p.Y.Label.Text = c.unit
	lo, hi := c.series[0].points[0].x, 0.0
	var lines []any
	for _, s := range c.series {
		xys := make(plotter.XYs, len(s.points))
		for i, pt := range s.points {
			xys[i].X, xys[i].Y = pt.x, pt.y
			lo, hi = min(lo, pt.x), max(hi, pt.x)
		}
		label := s.label
		if label == "" {
			label = c.unit
		}
		lines = append(lines, label, xys)
	}
	if lo > 0 && hi/lo >= 100 {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return fmt.Errorf("plotting %s: %w", c.title, err)
	}
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	c.file = fileName(c.title + "-" + c.unit + "-by-" + c.x + ".png")
	return p.Save(7*vg.Inch, 4*vg.Inch, filepath.Join(dir, c.file))
}

var unsafeInName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func fileName(s string) string { return unsafeInName.ReplaceAllString(s, "_") }
