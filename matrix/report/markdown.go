package report

import (
	"fmt"
	"io"
	"strings"

	"sealion.dev/matrix"
)

// Markdown writes the table: one row per distribution, one column per version, each cell the
// strategy and a verdict per identity path, reasons as numbered notes below.
func Markdown(w io.Writer, r matrix.Results) error {
	t := layout(r)
	var n notes
	var b strings.Builder
	fmt.Fprintf(&b, "# Conformance matrix\n\n%s.\n\nCells: %s.\n\n", runLine(r), summary(r))

	b.WriteString("| distribution |")
	for _, v := range t.Versions {
		b.WriteString(" " + versionHeader(v) + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(t.Versions)) + "\n")
	for _, rw := range t.Rows {
		b.WriteString("| " + rw.Distribution + " |")
		for _, g := range rw.Cells {
			b.WriteString(" " + markdownCell(g, &n) + " |")
		}
		b.WriteString("\n")
	}

	b.WriteString("\n")
	for _, s := range legend {
		fmt.Fprintf(&b, "%s %s · ", Symbol(s), s)
	}
	b.WriteString("each cell's first line is the strategy the CredentialIssuer reports, marked with the verdict of the " +
		"suite's Concierge checks (install, expected strategy, impersonation proxy).\n")
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
		line := strategyLine(*g)
		if g.Strategy.Status != matrix.Pass {
			line += fmt.Sprintf(" (%d)", n.ref(g.Name()+" strategy", string(g.Strategy.Status)+": "+shorten(g.Strategy.Reason, g.Strategy.Status)))
		}
		lines = append(lines, "**"+line+"**")
	} else {
		lines = append(lines, fmt.Sprintf("%s %s (%d)", Symbol(g.Status), g.Status,
			n.ref(g.Name(), string(g.Status)+": "+shorten(g.Reason, g.Status))))
	}
	for _, p := range g.Paths {
		line := p.Name + " " + Symbol(p.Status)
		switch {
		case g.Strategy == nil && p.Status == g.Status:
			// The group's note says it.
		case p.Status == matrix.NotBuilt:
			line += fmt.Sprintf(" (%d)", n.ref(p.Name, string(p.Status)+": "+p.Reason))
		case p.Status != matrix.Pass:
			line += fmt.Sprintf(" (%d)", n.ref(g.Name()+"/"+p.Name, string(p.Status)+": "+shorten(p.Reason, p.Status)))
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "<br>")
}

// escapeCell keeps a note on one Markdown line, out of table syntax and out of HTML (reasons
// quote output such as "<none>").
func escapeCell(s string) string {
	return strings.NewReplacer("\n", " / ", "|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}
