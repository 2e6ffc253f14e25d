package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every constructor call in the servers' sources gives one row, in Prometheus' naming.
func TestMetricsReferenceListsEveryDeclaration(t *testing.T) {
	all, err := declaredMetrics("../..")
	if err != nil {
		t.Fatal(err)
	}
	calls := regexp.MustCompile(`metrics\.New(Counter|CounterVec|Gauge|GaugeVec|Histogram|HistogramVec|Desc)\(`)
	declared := 0
	err = filepath.WalkDir("../../servers", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		declared += len(calls.FindAll(src, -1))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != declared || declared < 20 {
		t.Errorf("%d metrics read from %d constructor calls; want one each, and more than 20", len(all), declared)
	}
	name := regexp.MustCompile(`^pinniped_[a-z_]+$`)
	for _, m := range all {
		if !name.MatchString(m.name) || m.typ == "" || m.help == "" {
			t.Errorf("%s (%s): type %q, help %q", m.name, m.file, m.typ, m.help)
		}
		if m.typ == "counter" && !strings.HasSuffix(m.name, "_total") {
			t.Errorf("counter %s does not end in _total", m.name)
		}
	}
	page, err := metricsReference("../..")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "| `pinniped_concierge_strategy_status` | gauge | `strategy`, `status`, `reason` |") {
		t.Errorf("the page lacks the descriptor-made gauge:\n%s", page)
	}
}

// A declaration the generator cannot read fails it rather than leaving the metric out.
func TestMetricsReferenceRefusesWhatItCannotRead(t *testing.T) {
	for name, src := range map[string]string{
		"help from a variable": `package p
var c = metrics.NewCounter(&metrics.CounterOpts{Name: "pinniped_x_total", Help: help})`,
		"descriptor never used": `package p
var d = metrics.NewDesc("pinniped_x", "help", nil, nil, metrics.ALPHA, "")`,
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fileMetrics(f, "servers/concierge/p.go"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
