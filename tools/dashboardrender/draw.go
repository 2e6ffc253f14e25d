package main

import (
	"cmp"
	"fmt"
	"image/color"
	"os"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Grafana's grid: 24 columns, rows of a fixed height; a panel's gridPos is in those units.
const (
	columns   = 24
	columnW   = vg.Length(50) // vg's unit is the point
	rowH      = vg.Length(24)
	headerH   = 2 * rowH
	margin    = vg.Length(4)
	gridWidth = columns * columnW
)

var border = color.Gray{Y: 200}

// drawBoard lays the panels out on the dashboard's grid and writes the PNG.
func drawBoard(title string, panels []panel, s *scrapes, out string) error {
	rows := uint32(0)
	for _, p := range panels {
		rows = max(rows, p.grid.Y+p.grid.H)
	}
	height := headerH + vg.Length(rows)*rowH
	img := vgimg.New(gridWidth, height)
	c := draw.New(img)
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())

	header := textStyle(16, draw.XLeft)
	c.FillText(header, vg.Point{X: margin, Y: height - rowH}, title)
	start, end := s.times[0].UTC(), s.times[len(s.times)-1].UTC()
	c.FillText(textStyle(10, draw.XLeft), vg.Point{X: margin, Y: height - rowH - 14},
		fmt.Sprintf("%s to %s UTC, a scrape every %s; rates over %s as Grafana's $__rate_interval",
			start.Format("2006-01-02 15:04:05"), end.Format("15:04:05"), s.interval, s.rateInterval()))

	for _, p := range panels {
		area := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: vg.Length(p.grid.X)*columnW + margin, Y: height - headerH - vg.Length(p.grid.Y+p.grid.H)*rowH + margin},
			Max: vg.Point{X: vg.Length(p.grid.X+p.grid.W)*columnW - margin, Y: height - headerH - vg.Length(p.grid.Y)*rowH - margin},
		}}
		switch p.kind {
		case "row":
			area.FillText(textStyle(13, draw.XLeft), vg.Point{X: area.Min.X, Y: area.Min.Y + 2}, p.title)
		case "stat":
			frame(area)
			drawStat(area, p)
		default:
			frame(area)
			if err := drawTimeSeries(area, p, start, end); err != nil {
				return fmt.Errorf("panel %q: %w", p.title, err)
			}
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func textStyle(size vg.Length, align text.XAlignment) text.Style {
	return text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, size), XAlign: align, YAlign: draw.YBottom, Handler: plot.DefaultTextHandler}
}

func frame(area draw.Canvas) {
	area.SetColor(border)
	area.SetLineWidth(1)
	area.Stroke(area.Rectangle.Path())
}

// drawStat writes the panel's values large in its middle, as a stat panel shows them.
func drawStat(area draw.Canvas, p panel) {
	top := area.Max.Y - 14
	area.FillText(textStyle(11, draw.XLeft), vg.Point{X: area.Min.X + margin, Y: top}, p.title)
	var shown []string
	for _, v := range p.values {
		shown = append(shown, formatValue(v.v, p.unit))
	}
	big := textStyle(28, draw.XCenter)
	big.YAlign = draw.YCenter
	msg := strings.Join(shown, "  ")
	if msg == "" {
		msg, big.Font = "No data", font.From(plot.DefaultFont, 14)
	}
	area.FillText(big, vg.Point{X: (area.Min.X + area.Max.X) / 2, Y: (area.Min.Y + top) / 2}, msg)
}

// drawTimeSeries plots the panel's lines against the dashboard's time range; with none, it says
// No data as Grafana does.
func drawTimeSeries(area draw.Canvas, p panel, start, end time.Time) error {
	pl := plot.New()
	pl.X.Min, pl.X.Max = float64(start.Unix()), float64(end.Unix())
	pl.Title.Text = p.title
	pl.Title.TextStyle.Font.Size = 11
	pl.X.Tick.Marker = plot.TimeTicks{Format: "15:04:05", Time: func(t float64) time.Time { return time.Unix(int64(t), 0).UTC() }}
	pl.Y.Label.Text = unitLabel(p.unit)
	pl.Y.Min = 0
	pl.Legend.Top, pl.Legend.Left = true, true
	pl.Legend.TextStyle.Font.Size = 9
	if len(p.lines) == 0 {
		pl.HideAxes()
		pl.Y.Label.Text = ""
		pl.Draw(area)
		msg := textStyle(14, draw.XCenter)
		area.FillText(msg, vg.Point{X: (area.Min.X + area.Max.X) / 2, Y: (area.Min.Y + area.Max.Y) / 2}, "No data")
		return nil
	}
	top := 0.0
	for i, l := range p.lines {
		xys := make(plotter.XYs, len(l.points))
		for j, pt := range l.points {
			xys[j].X, xys[j].Y = float64(pt.T)/1000, pt.V
		}
		// Points as well as lines, as Grafana shows sparse series: a series of one point is one.
		ln, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		ln.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		ln.Width, pts.Radius = 1.5, 2
		pl.Add(ln, pts)
		pl.Legend.Add(l.label, ln)
		top = max(top, slices.MaxFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.Y, b.Y) }).Y)
	}
	if top <= 0 {
		pl.Y.Max = 1 // all at zero: Grafana's axis then goes to 1
	}
	pl.Draw(area)
	return nil
}

// unitLabel names a Grafana unit on an axis.
func unitLabel(unit string) string {
	switch unit {
	case "reqps":
		return "requests/s"
	case "s":
		return "seconds"
	case "percentunit":
		return "ratio"
	}
	return ""
}
