// Command chartrender prints the objects a Helm chart (a folder or a packaged .tgz) renders, as
// `helm template` would, for the e2e suites to hand to a cluster's API server: they validate a
// release's charts against each Kubernetes version's OpenAPI, which needs Helm's library, and
// that lives in this module, not the main one. Run it from the tools module:
//
//	go run ./chartrender --chart CHART --namespace NAMESPACE [--values '{"networkPolicy":{"enabled":true}}']
//
// Values are JSON, over the chart's defaults, and checked against its values.schema.json.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"

	"sealion.dev/tools/deploycheck"
)

func main() {
	fl := flag.NewFlagSet("chartrender", flag.ExitOnError)
	chart := fl.String("chart", "", "the chart: a folder or a packaged .tgz")
	namespace := fl.String("namespace", "default", "the release's namespace, as helm template --namespace")
	values := fl.String("values", "{}", "values over the chart's defaults, as a JSON object")
	fl.Parse(os.Args[1:])
	if err := render(os.Stdout, *chart, *namespace, *values); err != nil {
		fmt.Fprintf(os.Stderr, "chartrender: %v\n", err)
		os.Exit(1)
	}
}

func render(w io.Writer, chart, namespace, valuesJSON string) error {
	if chart == "" {
		return fmt.Errorf("no chart: give --chart DIR or --chart CHART.tgz")
	}
	var values map[string]any
	if err := json.Unmarshal([]byte(valuesJSON), &values); err != nil {
		return fmt.Errorf("--values is not a JSON object: %w", err)
	}
	objects, err := deploycheck.RenderChartInNamespace(chart, namespace, values)
	if err != nil {
		return err
	}
	for _, o := range objects {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}
