package report

import (
	"fmt"
	"html/template"
	"io"
	"path"
	"strings"

	"sealion.dev/matrix"
)

// HTML writes a self-contained page: the table, then per group its strategy, every test with its
// verdict and log, and links to every file of the group's log folder (go test output, component
// logs, Kubernetes events, the CredentialIssuer, screenshots of failed browser logins inline).
func HTML(w io.Writer, r matrix.Results) error {
	t := layout(r)
	return page.Execute(w, struct {
		matrix.Results
		Table    table
		Run      string
		Summary  string
		Flaky    []string
		Baseline string
		// PassedOver are the minors run at an older patch, and why.
		PassedOver []string
		Legend     []matrix.Status
		CSS        template.CSS
		// Installations are what an installed run found, shown first.
		Installations []foundInstallation
		// Strategies is each group's CredentialIssuer entries, and StrategiesNote explains them.
		Strategies     strategyGrid
		StrategiesNote string
	}{r, t, runLine(r), summary(r), flakyCells(r), baselineLine(r), passedOver(t), legend, template.CSS(css()), installations(r), strategies(r), strategiesNote})
}

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"anchor":       func(name string) string { return "g-" + strings.NewReplacer("/", "-", ".", "-").Replace(name) },
	"strategyLine": strategyLine,
	"seen":         strategySeen,
	"class":        func(s any) string { return cssClass(fmt.Sprint(s)) },
	// dict passes named values to a sub-template.
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
	"dur":       duration,
	"groupTime": groupTime,
	"isImage":   func(f string) bool { return strings.HasSuffix(f, ".png") },
	"rel": func(dir, f string) string {
		if rest, ok := strings.CutPrefix(f, dir+"/"); ok {
			return rest
		}
		return f
	},
	"base":   path.Base,
	"failed": func(s matrix.Status) bool { return s.Failed() },
	"ranTest": func(s matrix.Status) bool {
		return s == matrix.Pass || s == matrix.Fail || s == matrix.Skip || s == matrix.Flaky
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Conformance matrix</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:.35em .6em;vertical-align:top;text-align:left}
th{background:#f3f3f3}
td.cell a{color:inherit;text-decoration:none;display:block}
.v{display:inline-block;padding:0 .4em;border-radius:3px;font-weight:600;white-space:nowrap}
.v-not-built-yet{border:1px dashed #57606a}
.mismatch{color:#a40e26;font-weight:700}
.time{color:#57606a;font-size:12px}
{{.CSS}}pre{white-space:pre-wrap;margin:0;font-size:12px}
.files{columns:3;font-size:12px}
img{max-width:45%;border:1px solid #ccc;margin:.3em}
details{margin:.4em 0}
</style></head><body>
<h1>Conformance matrix</h1>
<p>{{.Run}}.<br>Cells: {{.Summary}}.</p>
{{range .Installations}}<p>Installation tested on {{.Group}}: {{index .Lines 0}}.</p><ul>{{range $i, $l := .Lines}}{{if $i}}<li>{{$l}}</li>{{end}}{{end}}</ul>
{{end}}{{if .Flaky}}<p><span class="v v-flaky">flaky</span> failed, then passed when run again: {{range $i, $c := .Flaky}}{{if $i}}, {{end}}{{$c}}{{end}}.</p>{{end}}
{{if .Baseline}}<p>{{.Baseline}}.</p>{{end}}
<table><tr><th>distribution</th>{{range .Table.Versions}}<th>{{.Minor}}{{if .Release}}<br><small>{{.Release}}</small>{{end}}</th>{{end}}</tr>
{{range .Table.Rows}}<tr><th>{{.Label}}</th>{{range .Cells}}{{if .}}<td class="cell"><a href="#{{anchor .Name}}">
{{if .Strategy}}strategy {{template "strategy" .Strategy}}{{else}}{{template "verdict" .Status}}{{end}}
{{range .Paths}}<br>{{.Name}} {{template "verdict" .Status}}{{if .Elapsed}} <span class="time">{{dur .Elapsed}}</span>{{end}}{{template "change" .Change}}{{end}}
{{with groupTime .}}<br><span class="time">{{.}}</span>{{end}}</a></td>{{else}}<td></td>{{end}}{{end}}</tr>
{{end}}</table>
{{range .PassedOver}}<p>Kubernetes {{.}}.</p>
{{end}}<p>Verdicts: {{range .Legend}}{{template "verdict" .}} {{end}}<br>
Changes since the baseline: <span class="v v-regression">regression</span> <span class="v v-fixed">fixed</span> <span class="v v-new-pass">new pass</span>.
A simulated distribution is a cluster built on this machine in the shape of the platform named, not that platform.</p>
{{with .Strategies}}{{if .Rows}}<h2>Strategies</h2>
<p>{{$.StrategiesNote}}</p>
<table><tr><th>cell</th>{{range .Types}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><th><a href="#{{anchor .Group}}">{{.Label}}</a></th>{{range .Cells}}<td>{{or . "not listed"}}</td>{{end}}</tr>
{{end}}</table>{{end}}{{end}}

{{range .Groups}}{{$g := .}}
<h2 id="{{anchor .Name}}">{{.Label}} {{.Version.Minor}}{{if .Version.Release}} ({{.Version.Release}}){{end}} {{template "verdict" .Status}}</h2>
{{if not .Started.IsZero}}<p>started {{.Started.UTC.Format "15:04:05 UTC"}}, took {{groupTime .}}</p>{{end}}
{{if and .Reason (not .Strategy)}}<pre>{{.Reason}}</pre>{{end}}
{{with .Strategy}}<p>CredentialIssuer strategy: expected <b>{{or .Expected "(not asserted)"}}</b>, seen (reported successful) <b>{{seen .}}</b>{{if .Mismatch}} <span class="mismatch">MISMATCH</span>{{end}} {{template "verdict" .Status}}</p>
{{if .Reason}}<pre>{{.Reason}}</pre>{{end}}{{end}}
<table><tr><th>check</th><th>test</th><th>verdict</th><th>time</th><th>reason</th></tr>
{{with .Strategy}}{{range .Tests}}{{template "test" dict "Check" "strategy" "T" .}}{{end}}{{end}}
{{range .Paths}}{{$p := .}}{{range .Tests}}{{template "test" dict "Check" $p.Name "T" . "Change" $p.Change}}{{else}}<tr><td>{{.Name}}{{template "change" .Change}}</td><td></td><td>{{template "verdict" .Status}}</td><td></td><td><pre>{{.Reason}}</pre></td></tr>
{{end}}{{end}}</table>
{{if .Files}}<details{{if failed .Status}} open{{end}}><summary>{{len .Files}} log files in {{.Dir}}</summary>
{{range .Files}}{{if isImage .}}<a href="{{.}}"><img src="{{.}}" alt="{{base .}}" title="{{rel $g.Dir .}}"></a>{{end}}{{end}}
<ul class="files">{{range .Files}}<li><a href="{{.}}">{{rel $g.Dir .}}</a></li>{{end}}</ul></details>{{end}}
{{end}}
</body></html>
{{define "verdict"}}<span class="v {{class .}}">{{.}}</span>{{end}}
{{define "change"}}{{if .}} <span class="v {{class .}}">{{.}}</span>{{end}}{{end}}
{{define "strategy"}}{{strategyLine .}} {{template "verdict" .Status}}{{end}}
{{define "test"}}{{$t := .T}}<tr><td>{{.Check}}{{template "change" .Change}}</td><td>{{if $t.Log}}<a href="{{$t.Log}}">{{$t.Name}}</a>{{else}}{{$t.Name}}{{end}}</td><td>{{template "verdict" $t.Status}}</td><td>{{if ranTest $t.Status}}{{dur $t.Elapsed}}{{end}}</td><td><pre>{{$t.Reason}}</pre>{{with $t.Retry}}<p>run again: {{template "verdict" .Status}} in {{dur .Elapsed}}{{if .Log}}, <a href="{{.Log}}">log</a>{{end}}</p>{{if .Reason}}<pre>{{.Reason}}</pre>{{end}}{{end}}</td></tr>
{{end}}
`))
