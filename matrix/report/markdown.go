package report

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"sealion.dev/matrix"
)

// Markdown writes the table: one row per distribution, one column per version, each cell the
// strategy expected and seen, a verdict and time per identity path and the group's time, reasons
// as numbered notes below. It is plain text: verdicts are words.
func Markdown(w io.Writer, r matrix.Results) error {
	t := layout(r)
	var n notes
	var b strings.Builder
	fmt.Fprintf(&b, "# Conformance matrix\n\n%s.\n\nCells: %s.\n", runLine(r), summary(r))
	for _, inst := range installations(r) {
		fmt.Fprintf(&b, "\nInstallation tested on %s: %s.\n\n", inst.Group, escapeCell(inst.Lines[0]))
		for _, line := range inst.Lines[1:] {
			b.WriteString("- " + escapeCell(line) + "\n")
		}
	}
	if flaky := flakyCells(r); len(flaky) > 0 {
		fmt.Fprintf(&b, "\nFlaky (failed, then passed when run again; see the notes): %s.\n", strings.Join(flaky, ", "))
	}
	if line := baselineLine(r); line != "" {
		fmt.Fprintf(&b, "\n%s.\n", line)
	}

	b.WriteString("\n| distribution |")
	for _, v := range t.Versions {
		b.WriteString(" " + versionHeader(v) + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(t.Versions)) + "\n")
	for _, rw := range t.Rows {
		b.WriteString("| " + rw.Label + " |")
		for _, g := range rw.Cells {
			b.WriteString(" " + markdownCell(g, &n) + " |")
		}
		b.WriteString("\n")
	}

	for _, line := range passedOver(t) {
		b.WriteString("\nKubernetes " + escapeCell(line) + ".\n")
	}
	b.WriteString("\nVerdicts: " + strings.Join(mapStrings(legend), ", ") + " (flaky: failed, then passed when run again). " +
		"Each cell's first line is the CredentialIssuer strategy expected and the one the CredentialIssuer reports, with the verdict " +
		"of the suite's Concierge checks (install, expected strategy, impersonation proxy); its last line the group's wall time " +
		"(cluster creation and teardown included) and the part its tests took. A simulated distribution is a cluster built on " +
		"this machine in the shape of the platform named, not that platform.\n")
	if grid := strategies(r); len(grid.Rows) > 0 {
		b.WriteString("\n## Strategies\n\n" + strategiesNote + "\n\n| cell |")
		for _, t := range grid.Types {
			b.WriteString(" " + t + " |")
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(grid.Types)) + "\n")
		for _, row := range grid.Rows {
			b.WriteString("| " + row.Label + " |")
			for _, c := range row.Cells {
				b.WriteString(" " + cmp.Or(c, "not listed") + " |")
			}
			b.WriteString("\n")
		}
	}
	if len(n.texts) > 0 {
		b.WriteString("\n## Notes\n\n")
		for i, text := range n.texts {
			fmt.Fprintf(&b, "%d. %s: %s\n", i+1, strings.Join(n.where[i], ", "), escapeCell(text))
		}
		fmt.Fprintf(&b, "\nLogs of every cell: %s.\n", HTMLFile)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func markdownCell(g *matrix.GroupResult, n *notes) string {
	if g == nil {
		return ""
	}
	var lines []string
	if g.Strategy != nil {
		line := "strategy " + strategyLine(*g.Strategy) + ": " + string(g.Strategy.Status)
		if g.Strategy.Status != matrix.Pass {
			line += fmt.Sprintf(" (%d)", n.ref(g.Name()+" strategy", string(g.Strategy.Status)+": "+shorten(g.Strategy.Reason, g.Strategy.Status)))
		}
		lines = append(lines, "**"+line+"**")
	} else {
		lines = append(lines, fmt.Sprintf("%s (%d)", g.Status, n.ref(g.Name(), string(g.Status)+": "+shorten(g.Reason, g.Status))))
	}
	for _, p := range g.Paths {
		line := p.Name + ": " + string(p.Status)
		if p.Elapsed > 0 {
			line += " " + duration(p.Elapsed)
		}
		switch {
		case g.Strategy == nil && p.Status == g.Status:
			// The group's note says it.
		case p.Status == matrix.NotBuilt:
			line += fmt.Sprintf(" (%d)", n.ref(p.Name, string(p.Status)+": "+p.Reason))
		case p.Status == matrix.Flaky:
			line += fmt.Sprintf(" (%d)", n.ref(g.Name()+"/"+p.Name, "flaky, failed first: "+shorten(p.Reason, matrix.Fail)))
		case p.Status != matrix.Pass:
			line += fmt.Sprintf(" (%d)", n.ref(g.Name()+"/"+p.Name, string(p.Status)+": "+shorten(p.Reason, p.Status)))
		}
		if p.Change != "" {
			line += " **" + strings.ToUpper(string(p.Change)) + "**"
		}
		lines = append(lines, line)
	}
	if t := groupTime(*g); t != "" {
		lines = append(lines, "time "+t)
	}
	return strings.Join(lines, "<br>")
}

// escapeCell keeps a note on one Markdown line, out of table syntax and out of HTML (reasons
// quote output such as "<none>").
func escapeCell(s string) string {
	return strings.NewReplacer("\n", " / ", "|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}
