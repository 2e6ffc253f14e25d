// Package report renders a matrix run for people and for CI: a Markdown table (distribution x
// Kubernetes version, each cell the strategy expected and seen and a verdict per identity path,
// with times and changes since a baseline), a static HTML page linking every cell's logs, JUnit
// XML, and the results as JSON. Verdicts are words (pass, flaky, fail, ...), coloured where the
// format allows, never symbols a font may lack.
package report

import (
	"bytes"
	"cmp"
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

// legend lists the verdicts in the order reports explain and count them.
var legend = []matrix.Status{matrix.Pass, matrix.Flaky, matrix.Fail, matrix.Error, matrix.Skip, matrix.CannotRun, matrix.NotRun, matrix.NotBuilt}

// style is how a verdict or a change is coloured: background and text colours for the HTML page
// (every pair has a contrast of at least 4.5:1, WCAG AA) and an ANSI SGR code for terminals.
type style struct{ bg, fg, ansi string }

var styles = map[string]style{
	string(matrix.Pass):       {"#1a7f37", "#ffffff", "1;32"},
	string(matrix.Flaky):      {"#ffd33d", "#3b2300", "1;33"},
	string(matrix.Fail):       {"#cf222e", "#ffffff", "1;31"},
	string(matrix.Error):      {"#8250df", "#ffffff", "1;35"},
	string(matrix.Skip):       {"#ddf4ff", "#0a3069", "36"},
	string(matrix.CannotRun):  {"#57606a", "#ffffff", "90"},
	string(matrix.NotRun):     {"#eaeef2", "#24292f", "2"},
	string(matrix.NotBuilt):   {"#ffffff", "#57606a", "2"},
	string(matrix.Regression): {"#ffebe9", "#a40e26", "1;4;31"},
	string(matrix.Fixed):      {"#dafbe1", "#116329", "1;4;32"},
	string(matrix.NewPass):    {"#dafbe1", "#116329", "1;4;32"},
}

// ANSI is a verdict or change as text, coloured for a terminal.
func ANSI(text string) string {
	st, ok := styles[text]
	if !ok || st.ansi == "" {
		return text
	}
	return "\x1b[" + st.ansi + "m" + text + "\x1b[0m"
}

// cssClass is the HTML class of a verdict or change: "v-not-built-yet".
func cssClass(text string) string { return "v-" + strings.ReplaceAll(text, " ", "-") }

// css styles every verdict and change.
func css() string {
	var b strings.Builder
	for _, name := range append(mapStrings(legend), string(matrix.Regression), string(matrix.Fixed), string(matrix.NewPass)) {
		st := styles[name]
		fmt.Fprintf(&b, ".%s{background:%s;color:%s}\n", cssClass(name), st.bg, st.fg)
	}
	return b.String()
}

func mapStrings[T ~string](list []T) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = string(v)
	}
	return out
}

// table is the results laid out as distribution rows and version columns.
type table struct {
	Versions []kubeversions.Version
	Rows     []row
}

type row struct {
	Distribution string
	// Label is the distribution as GroupResult.Label shows it.
	Label string
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
			t.Rows = append(t.Rows, row{Distribution: g.Distribution, Label: g.Label(), Cells: make([]*matrix.GroupResult, len(t.Versions))})
			ri = len(t.Rows) - 1
		}
		ci := slices.IndexFunc(t.Versions, func(v kubeversions.Version) bool { return v.Minor == g.Version.Minor })
		t.Rows[ri].Cells[ci] = g
	}
	return t
}

// passedOver lists the minors that run an older patch than the newest, and why.
func passedOver(t table) []string {
	var out []string
	for _, v := range t.Versions {
		if line := v.PassedOver(); line != "" {
			out = append(out, v.Minor+" "+line)
		}
	}
	return out
}

func versionHeader(v kubeversions.Version) string {
	if v.Release == "" {
		return v.Minor
	}
	return v.Minor + " (" + v.Release + ")"
}

// strategyGrid is what each group's CredentialIssuer said of each strategy: a row per group, a
// column per strategy type.
type strategyGrid struct {
	Types []string
	Rows  []strategyRow
}

type strategyRow struct {
	// Group is the group's name (GroupResult.Name); Label its distribution and version.
	Group, Label string
	// Cells has one entry per type: "Success (FetchedKey)", or "" where the type was not listed.
	Cells []string
}

// knownStrategies orders the grid's columns as the Concierge orders its entries.
var knownStrategies = []string{"KubeClusterSigningCertificate", "CertificateSigningRequest", "ImpersonationProxy"}

// strategies lays out the groups' strategy entries; empty when no group has any.
func strategies(r matrix.Results) strategyGrid {
	var g strategyGrid
	seen := map[string]bool{}
	for _, gr := range r.Groups {
		if gr.Strategy == nil {
			continue
		}
		for _, e := range gr.Strategy.Entries {
			seen[e.Type] = true
		}
	}
	for _, t := range knownStrategies {
		if seen[t] {
			g.Types = append(g.Types, t)
			delete(seen, t)
		}
	}
	others := make([]string, 0, len(seen))
	for t := range seen {
		others = append(others, t)
	}
	slices.Sort(others)
	g.Types = append(g.Types, others...)
	if len(g.Types) == 0 {
		return g
	}
	for _, gr := range r.Groups {
		if gr.Strategy == nil || len(gr.Strategy.Entries) == 0 {
			continue
		}
		row := strategyRow{Group: gr.Name(), Label: gr.Label() + " " + gr.Version.Minor, Cells: make([]string, len(g.Types))}
		for _, e := range gr.Strategy.Entries {
			row.Cells[slices.Index(g.Types, e.Type)] = e.Status + " (" + e.Reason + ")"
		}
		g.Rows = append(g.Rows, row)
	}
	return g
}

// strategiesNote explains the grid.
const strategiesNote = "What each cell's CredentialIssuer said of each strategy at the end of its run; " +
	"for a strategy listed only while a test enabled it (CertificateSigningRequest, which auto mode leaves " +
	"to the others where one of them serves), what it said then. Success: it can issue credentials there; " +
	"Error: the reason it cannot."

// strategySeen is the strategies the CredentialIssuer reported successful.
func strategySeen(s matrix.StrategyResult) string {
	switch {
	case s.Chosen == nil:
		return "unknown"
	case len(s.Chosen) == 0:
		return "none"
	}
	return strings.Join(s.Chosen, " + ")
}

// strategyLine puts the strategy expected and the one seen side by side, a mismatch called so.
func strategyLine(s matrix.StrategyResult) string {
	line := "expected " + cmp.Or(s.Expected, "(not asserted)") + ", seen " + strategySeen(s)
	if s.Mismatch() {
		line += ": MISMATCH"
	}
	return line
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

// flakyCells names the cells (and strategy checks) that passed only when their failed tests ran
// again; they do not fail the run, so the summary lists them.
func flakyCells(r matrix.Results) []string {
	var out []string
	for _, g := range r.Groups {
		if g.Strategy != nil && g.Strategy.Status == matrix.Flaky {
			out = append(out, g.Name()+" strategy")
		}
		for _, p := range g.Paths {
			if p.Status == matrix.Flaky {
				out = append(out, g.Name()+"/"+p.Name)
			}
		}
	}
	return out
}

// baselineLine counts the cells that changed since the baseline, naming the regressions; empty
// when the run was not compared.
func baselineLine(r matrix.Results) string {
	if r.Baseline == "" {
		return ""
	}
	n := map[matrix.Change][]string{}
	for _, g := range r.Groups {
		for _, p := range g.Paths {
			if p.Change != "" {
				n[p.Change] = append(n[p.Change], g.Name()+"/"+p.Name)
			}
		}
	}
	line := fmt.Sprintf("Against baseline %s: %d regression", r.Baseline, len(n[matrix.Regression]))
	if len(n[matrix.Regression]) != 1 {
		line += "s"
	}
	if len(n[matrix.Regression]) > 0 {
		line += " (" + strings.Join(n[matrix.Regression], ", ") + ")"
	}
	return line + fmt.Sprintf(", %d fixed, %d new pass, the other cells unchanged", len(n[matrix.Fixed]), len(n[matrix.NewPass]))
}

// duration rounds a time for reports.
func duration(d time.Duration) string {
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// groupTime is a group's wall time and the part its tests took, empty when it did not run.
func groupTime(g matrix.GroupResult) string {
	switch {
	case g.Duration > 0 && g.TestTime > 0:
		return duration(g.Duration) + " (tests " + duration(g.TestTime) + ")"
	case g.Duration > 0:
		return duration(g.Duration)
	case g.TestTime > 0:
		return "tests " + duration(g.TestTime)
	}
	return ""
}

// runLine describes the run: when, which checkout, how long, on what.
// foundInstallation is what a group found installed (matrix --installed), as summary lines: who
// installed it and its suffix, then one line per server and the CredentialIssuer.
type foundInstallation struct {
	Group string
	Lines []string
}

// installations are the installations the groups of an installed run found, for the top of a
// report; none for a run that installed ours.
func installations(r matrix.Results) []foundInstallation {
	var found []foundInstallation
	for _, g := range r.Groups {
		if g.Installation != nil {
			found = append(found, foundInstallation{Group: g.Name(), Lines: g.Installation.Summary()})
		}
	}
	return found
}

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
