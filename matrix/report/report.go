// Package report renders a matrix run for people and for CI: a Markdown table (distribution x
// Kubernetes version, each cell the strategy chosen and a verdict per identity path), a static HTML
// page linking every cell's logs, JUnit XML, and the results as JSON.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sealion.dev/matrix"
	"sealion.dev/matrix/kubeversions"
)

// Files written by WriteAll into the report folder.
const (
	MarkdownFile = "report.md"
	HTMLFile     = "index.html"
	JUnitFile    = "junit.xml"
	JSONFile     = "results.json"
)

// WriteAll writes every format into dir.
func WriteAll(dir string, r matrix.Results) error {
	for name, render := range map[string]func(io.Writer, matrix.Results) error{
		MarkdownFile: Markdown, HTMLFile: HTML, JUnitFile: JUnit, JSONFile: JSON,
	} {
		var buf bytes.Buffer
		if err := render(&buf, r); err != nil {
			return fmt.Errorf("rendering %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// JSON writes the results as indented JSON.
func JSON(w io.Writer, r matrix.Results) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Symbol is the one-character verdict tables use.
func Symbol(s matrix.Status) string {
	switch s {
	case matrix.Pass:
		return "✅"
	case matrix.Fail:
		return "❌"
	case matrix.Error:
		return "⚠️"
	case matrix.Skip:
		return "⏭️"
	case matrix.NotBuilt:
		return "🚧"
	case matrix.CannotRun:
		return "⛔"
	case matrix.NotRun:
		return "⏸️"
	}
	return "?"
}

// legend explains the symbols, in the order of Symbol.
var legend = []matrix.Status{matrix.Pass, matrix.Fail, matrix.Error, matrix.Skip, matrix.NotBuilt, matrix.CannotRun, matrix.NotRun}

// table is the results laid out as distribution rows and version columns.
type table struct {
	Versions []kubeversions.Version
	Rows     []row
}

type row struct {
	Distribution string
	// Cells has one entry per version; nil where the run had no group.
	Cells []*matrix.GroupResult
}

func layout(r matrix.Results) table {
	var t table
	for _, g := range r.Groups {
		if !slices.ContainsFunc(t.Versions, func(v kubeversions.Version) bool { return v.Minor == g.Version.Minor }) {
			t.Versions = append(t.Versions, g.Version)
		}
	}
	// By minor; a cluster's own version last.
	slices.SortStableFunc(t.Versions, func(a, b kubeversions.Version) int {
		key := func(v kubeversions.Version) int {
			if v.Minor == matrix.ClusterVersionLabel {
				return 1 << 30
			}
			return v.MinorNumber()
		}
		return key(a) - key(b)
	})
	for i := range r.Groups {
		g := &r.Groups[i]
		ri := slices.IndexFunc(t.Rows, func(rw row) bool { return rw.Distribution == g.Distribution })
		if ri < 0 {
			t.Rows = append(t.Rows, row{Distribution: g.Distribution, Cells: make([]*matrix.GroupResult, len(t.Versions))})
			ri = len(t.Rows) - 1
		}
		ci := slices.IndexFunc(t.Versions, func(v kubeversions.Version) bool { return v.Minor == g.Version.Minor })
		t.Rows[ri].Cells[ci] = g
	}
	return t
}

func versionHeader(v kubeversions.Version) string {
	if v.Release == "" {
		return v.Minor
	}
	return v.Minor + " (" + v.Release + ")"
}

// strategyLine is what a cell says of its CredentialIssuer: the strategies reported successful,
// else the expected one, with the verdict.
func strategyLine(g matrix.GroupResult) string {
	s := g.Strategy
	if s == nil {
		return ""
	}
	name := strings.Join(s.Chosen, " + ")
	switch {
	case name == "" && s.Expected != "":
		name = "expected " + s.Expected
	case name == "":
		name = "no strategy"
	case s.Expected == "":
		name += " (not asserted)"
	}
	return name + " " + Symbol(s.Status)
}

// summary is the one-line count of cells by status.
func summary(r matrix.Results) string {
	counts := r.Counts()
	var parts []string
	for _, s := range legend {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return "no cells"
	}
	return strings.Join(parts, ", ")
}

// runLine describes the run: when, which checkout, how long, on what.
func runLine(r matrix.Results) string {
	parts := []string{"started " + r.Started.UTC().Format("2006-01-02 15:04 UTC")}
	if r.Commit != "" {
		parts = append(parts, "commit "+r.Commit)
	}
	wall := "wall time " + r.Duration.Round(time.Second).String()
	if r.Budget > 0 {
		wall += " (budget " + r.Budget.String() + ")"
	}
	parts = append(parts, wall)
	if r.Host != "" {
		parts = append(parts, "host: "+r.Host)
	}
	return strings.Join(parts, ", ")
}

// notes numbers the distinct reasons cells give, so a table cell can point at one.
type notes struct {
	texts []string
	where [][]string
}

func (n *notes) ref(where, text string) int {
	i := slices.Index(n.texts, text)
	if i < 0 {
		n.texts = append(n.texts, text)
		n.where = append(n.where, nil)
		i = len(n.texts) - 1
	}
	if !slices.Contains(n.where[i], where) {
		n.where[i] = append(n.where[i], where)
	}
	return i + 1
}

// shorten keeps the first lines of a long reason, or the last ones for a failure, whose test
// logged what it did before the error; the HTML page and the logs have the rest.
func shorten(s string, status matrix.Status) string {
	const lines, chars = 3, 400
	ls := strings.Split(strings.TrimSpace(s), "\n")
	switch {
	case len(ls) <= lines:
	case status == matrix.Fail:
		ls = append([]string{"…"}, ls[len(ls)-lines:]...)
	default:
		ls = append(ls[:lines], "…")
	}
	out := strings.Join(ls, " / ")
	if r := []rune(out); len(r) > chars {
		out = string(r[:chars]) + "…"
	}
	return out
}
