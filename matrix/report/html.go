package report

import (
	"html/template"
	"io"
	"path"
	"strings"
	"time"

	"sealion.dev/matrix"
)

// HTML writes a self-contained page: the table, then per group its strategy, every test with its
// verdict and log, and links to every file of the group's log folder (go test output, component
// logs, Kubernetes events, the CredentialIssuer, screenshots of failed browser logins inline).
func HTML(w io.Writer, r matrix.Results) error {
	return page.Execute(w, struct {
		matrix.Results
		Table   table
		Run     string
		Summary string
		Legend  []matrix.Status
	}{r, layout(r), runLine(r), summary(r), legend})
}

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"symbol":   Symbol,
	"anchor":   func(name string) string { return "g-" + strings.NewReplacer("/", "-", ".", "-").Replace(name) },
	"strategy": strategyLine,
	"dur":      func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() },
	"isImage":  func(f string) bool { return strings.HasSuffix(f, ".png") },
	"rel": func(dir, f string) string {
		if rest, ok := strings.CutPrefix(f, dir+"/"); ok {
			return rest
		}
		return f
	},
	"base":    path.Base,
	"failed":  func(s matrix.Status) bool { return s.Failed() },
	"ranTest": func(s matrix.Status) bool { return s == matrix.Pass || s == matrix.Fail || s == matrix.Skip },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Conformance matrix</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:.35em .6em;vertical-align:top;text-align:left}
th{background:#f3f3f3}
td.cell a{color:inherit;text-decoration:none;display:block}
.fail,.error{background:#fdecea}.pass{background:#eef8ee}
pre{white-space:pre-wrap;margin:0;font-size:12px}
.files{columns:3;font-size:12px}
img{max-width:45%;border:1px solid #ccc;margin:.3em}
details{margin:.4em 0}
</style></head><body>
<h1>Conformance matrix</h1>
<p>{{.Run}}.<br>Cells: {{.Summary}}.</p>
<table><tr><th>distribution</th>{{range .Table.Versions}}<th>{{.Minor}}{{if .Release}}<br><small>{{.Release}}</small>{{end}}</th>{{end}}</tr>
{{range .Table.Rows}}<tr><th>{{.Distribution}}</th>{{range .Cells}}{{if .}}<td class="cell {{.Status}}"><a href="#{{anchor .Name}}">
{{if .Strategy}}<b>{{strategy .}}</b>{{else}}{{symbol .Status}} {{.Status}}{{end}}
{{range .Paths}}<br>{{.Name}} {{symbol .Status}}{{end}}</a></td>{{else}}<td></td>{{end}}{{end}}</tr>
{{end}}</table>
<p>{{range .Legend}}{{symbol .}} {{.}} · {{end}}</p>

{{range .Groups}}{{$g := .}}
<h2 id="{{anchor .Name}}">{{.Name}}{{if .Version.Release}} ({{.Version.Release}}){{end}} {{symbol .Status}} {{.Status}}</h2>
{{if not .Started.IsZero}}<p>started {{.Started.UTC.Format "15:04:05 UTC"}}, took {{dur .Duration}}</p>{{end}}
{{if and .Reason (not .Strategy)}}<pre>{{.Reason}}</pre>{{end}}
{{with .Strategy}}<p>CredentialIssuer strategy: expected <b>{{or .Expected "(not asserted)"}}</b>, reported successful: <b>{{range $i, $s := .Chosen}}{{if $i}}, {{end}}{{$s}}{{else}}unknown{{end}}</b> — {{symbol .Status}} {{.Status}}</p>
{{if .Reason}}<pre>{{.Reason}}</pre>{{end}}{{end}}
<table><tr><th>check</th><th>test</th><th>verdict</th><th>time</th><th>reason</th></tr>
{{with .Strategy}}{{range .Tests}}<tr class="{{.Status}}"><td>strategy</td><td>{{if .Log}}<a href="{{.Log}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}</td><td>{{symbol .Status}} {{.Status}}</td><td>{{if ranTest .Status}}{{dur .Elapsed}}{{end}}</td><td><pre>{{.Reason}}</pre></td></tr>
{{end}}{{end}}
{{range .Paths}}{{$p := .}}{{range .Tests}}<tr class="{{.Status}}"><td>{{$p.Name}}</td><td>{{if .Log}}<a href="{{.Log}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}</td><td>{{symbol .Status}} {{.Status}}</td><td>{{if ranTest .Status}}{{dur .Elapsed}}{{end}}</td><td><pre>{{.Reason}}</pre></td></tr>
{{else}}<tr class="{{.Status}}"><td>{{.Name}}</td><td></td><td>{{symbol .Status}} {{.Status}}</td><td></td><td><pre>{{.Reason}}</pre></td></tr>
{{end}}{{end}}</table>
{{if .Files}}<details{{if failed .Status}} open{{end}}><summary>{{len .Files}} log files in {{.Dir}}</summary>
{{range .Files}}{{if isImage .}}<a href="{{.}}"><img src="{{.}}" alt="{{base .}}" title="{{rel $g.Dir .}}"></a>{{end}}{{end}}
<ul class="files">{{range .Files}}<li><a href="{{.}}">{{rel $g.Dir .}}</a></li>{{end}}</ul></details>{{end}}
{{end}}
</body></html>
`))
