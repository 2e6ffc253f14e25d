// Command dashboards writes the Grafana dashboards of the Concierge's and the Supervisor's charts
// (files/dashboard.json), built with Grafana's own Go SDK so that they follow Grafana's dashboard
// schema. Run from the tools module: go run ./dashboards [--repo-root ..]; tools/codegen/update.sh
// runs it and verify-generate fails when a dashboard is stale.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

func main() {
	root := flag.String("repo-root", "..", "root of the repository")
	flag.Parse()
	if err := write(*root); err != nil {
		fmt.Fprintf(os.Stderr, "dashboards: %v\n", err)
		os.Exit(1)
	}
}

func write(root string) error {
	for _, d := range dashboards {
		data, err := render(d)
		if err != nil {
			return fmt.Errorf("%s: %w", d.title, err)
		}
		if err := os.WriteFile(filepath.Join(root, d.chart, "files", "dashboard.json"), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// board is one dashboard: rows of panels.
type board struct {
	chart, uid, title, description string
	rows                           []row
}

type row struct {
	title  string
	panels []panel
}

// panel is a time series or, when single, a stat of the latest value.
type panel struct {
	title, description, unit string
	single                   bool
	queries                  []query
}

type query struct{ expr, legend string }

// datasource is the dashboard's variable: the Prometheus that scrapes the servers.
var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

func render(b board) ([]byte, error) {
	builder := dashboard.NewDashboardBuilder(b.title).
		Uid(b.uid).
		Description(b.description).
		Tags([]string{"pinniped"}).
		Refresh("1m").
		Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus"))
	id := uint32(0) // Grafana links to a panel by its id: numbered in order, so that links stay put
	for _, r := range b.rows {
		id++
		builder = builder.WithRow(dashboard.NewRowBuilder(r.title).Id(id))
		for _, p := range r.panels {
			id++
			builder = builder.WithPanel(panelBuilder(id, p))
		}
	}
	d, err := builder.Build()
	if err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(d, "", "  ")
	return append(data, '\n'), err
}

func panelBuilder(id uint32, p panel) cog.Builder[dashboard.Panel] {
	if p.single {
		s := stat.NewPanelBuilder().Id(id).Title(p.title).Description(p.description).Datasource(datasource).Unit(p.unit).
			Height(6).Span(6).GraphMode(common.BigValueGraphModeNone)
		for _, q := range p.queries {
			s = s.WithTarget(prometheus.NewDataqueryBuilder().Expr(q.expr).LegendFormat(q.legend).Instant())
		}
		return s
	}
	t := timeseries.NewPanelBuilder().Id(id).Title(p.title).Description(p.description).Datasource(datasource).Unit(p.unit).
		Height(8).Span(12).Min(0)
	for _, q := range p.queries {
		t = t.WithTarget(prometheus.NewDataqueryBuilder().Expr(q.expr).LegendFormat(q.legend))
	}
	return t
}
