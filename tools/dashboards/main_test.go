package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/prometheus/promql/parser"
)

const repoRoot = "../.."

// The committed dashboards are what the generator writes, read back strictly by Grafana's SDK
// (unknown or mistyped fields, a missing required one, fail), and every query parses as PromQL and
// selects only metrics the servers export.
func TestDashboards(t *testing.T) {
	plugins.RegisterDefaultPlugins() // so that panels and queries decode as their types
	reference, err := os.ReadFile(filepath.Join(repoRoot, "docs", "reference", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(pinniped_[a-z_]+)` \\|").FindAllStringSubmatch(string(reference), -1) {
		exported[m[1]] = true
	}
	for _, b := range dashboards {
		t.Run(b.title, func(t *testing.T) {
			want, err := render(b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(repoRoot, b.chart, "files", "dashboard.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Error("files/dashboard.json is stale: make generate")
			}
			var strict dashboard.Dashboard
			if err := schemaError(strict.UnmarshalJSONStrict(got)); err != nil {
				t.Fatalf("Grafana's schema refuses the dashboard: %v", err)
			}
			// The strict decoder checks everything but drops panels on the way (it takes its own
			// empty error list for an error): the panels are read with the plain one.
			var d dashboard.Dashboard
			if err := json.Unmarshal(got, &d); err != nil {
				t.Fatal(err)
			}
			if err := schemaError(d.Validate()); err != nil {
				t.Fatalf("Grafana's schema refuses the dashboard: %v", err)
			}
			queries := 0
			for _, p := range d.Panels {
				if p.Panel == nil {
					continue // a row
				}
				for _, target := range p.Panel.Targets {
					q, ok := target.(*prometheus.Dataquery)
					if !ok {
						t.Errorf("panel %q: a query of type %T, want Prometheus'", *p.Panel.Title, target)
						continue
					}
					queries++
					expr, err := parser.NewParser(parser.Options{}).ParseExpr(strings.ReplaceAll(q.Expr, "$__rate_interval", "5m"))
					if err != nil {
						t.Errorf("panel %q: %v", *p.Panel.Title, err)
						continue
					}
					parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
						if vs, ok := n.(*parser.VectorSelector); ok {
							name := strings.TrimSuffix(vs.Name, "_bucket")
							if !exported[name] {
								t.Errorf("panel %q selects %s, which no server exports", *p.Panel.Title, vs.Name)
							}
						}
						return nil
					})
				}
			}
			if queries < 10 {
				t.Errorf("%d queries", queries)
			}
		})
	}
}

// schemaError is err but nil for an empty list: the SDK returns its list of errors even when empty.
func schemaError(err error) error {
	var list cog.BuildErrors
	if errors.As(err, &list) && len(list) == 0 {
		return nil
	}
	return err
}

// The strict decoder the test relies on refuses a field Grafana's schema does not have, in the
// dashboard and in a panel (a query's fields it does not check: the test parses each as PromQL).
func TestStrictDecoderRefusesUnknownFields(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	good, err := render(concierge)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ old, new string }{
		{`"transparent": false,`, `"transparent": false, "transparency": 1,`},
		{`"refresh": "1m",`, `"refresh": "1m", "refreshRate": 1,`},
	} {
		data := bytes.Replace(good, []byte(bad.old), []byte(bad.new), 1)
		if bytes.Equal(data, good) {
			t.Fatalf("%s is not in the dashboard", bad.old)
		}
		var d dashboard.Dashboard
		if err := schemaError(d.UnmarshalJSONStrict(data)); err == nil {
			t.Errorf("%s accepted", bad.new)
		}
	}
}
