// Command dashboardrender draws one of the charts' Grafana dashboards as a PNG from scrapes of the
// servers' /metrics, as Grafana shows it over a Prometheus that made those scrapes: every panel's
// queries evaluated by Prometheus' own engine, $__rate_interval as Grafana sets it, panels where
// the dashboard's grid puts them. make demo runs it on the Concierge's scrapes around its logins,
// so that a newcomer sees the dashboard of the logins they just watched without a Prometheus or a
// Grafana.
//
//	dashboardrender --dashboard FILE.json --scrapes DIR --out FILE.png
//
// DIR holds one file per scrape of one pod, named UNIXMILLIS-POD.txt, in Prometheus' text format.
// It prints, per panel, the latest value of each series.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	dashboard := flag.String("dashboard", "", "the dashboard's JSON (a chart's files/dashboard.json)")
	scrapes := flag.String("scrapes", "", "folder of the scrapes: UNIXMILLIS-POD.txt in Prometheus' text format")
	out := flag.String("out", "dashboard.png", "the PNG to write")
	flag.Parse()
	if err := run(context.Background(), *dashboard, *scrapes, *out, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "dashboardrender: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dashboardFile, scrapeDir, out string, summary io.Writer) error {
	board, err := readDashboard(dashboardFile)
	if err != nil {
		return err
	}
	recorded, err := readScrapes(scrapeDir)
	if err != nil {
		return err
	}
	panels, err := evaluate(ctx, board, recorded)
	if err != nil {
		return err
	}
	if err := drawBoard(board.title, panels, recorded, out); err != nil {
		return err
	}
	for _, p := range panels {
		fmt.Fprintf(summary, "%s: %s\n", p.title, p.latest())
	}
	return nil
}
