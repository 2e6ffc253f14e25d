package provider

import (
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"

	"github.com/ory/fosite"
)

// The form_post response page. The CLI listens on a loopback address, and browsers treat a page
// of the Supervisor posting there as reaching into the private network: a plain auto-submitted
// form may be refused (and sends no usable Origin under our no-referrer policy). So a script
// sends the response with fetch in CORS mode, which the CLI's listener allows after its
// preflight, and when that fails the page shows the code for the user to paste into the CLI.
const formPostScript = `(function () {
  var form = document.getElementById("response");
  var done = function (id) {
    document.getElementById("sending").hidden = true;
    document.getElementById(id).hidden = false;
  };
  fetch(form.action, {method: "POST", mode: "cors", body: new URLSearchParams(new FormData(form))})
    .then(function (r) { done(r.ok ? "sent" : "manual"); })
    .catch(function () { done("manual"); });
})();`

// formPostScriptCSP allows that one script, by its hash, and nothing else.
var formPostScriptCSP = func() string {
	sum := sha256.Sum256([]byte(formPostScript))
	return "default-src 'none'; connect-src http://127.0.0.1:* http://[::1]:* http://localhost:*; " +
		"script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; style-src 'unsafe-inline'; frame-ancestors 'none'"
}()

var formPostPage = template.Must(template.New("form_post").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pinniped login</title>
<style>
body { font-family: sans-serif; max-width: 32em; margin: 4em auto; padding: 0 1em; }
code { display: block; padding: .5em; background: #eee; word-break: break-all; }
</style>
</head>
<body>
<form id="response" method="post" action="{{.RedirURL}}">
{{- range $key, $values := .Parameters}}{{range $values}}
<input type="hidden" name="{{$key}}" value="{{.}}">
{{- end}}{{end}}
</form>
<p id="sending">Finishing your login&hellip;</p>
<p id="sent" hidden>You have been logged in and may now close this tab.</p>
<div id="manual" hidden>
{{- with .Parameters.Get "code"}}
<p>To finish your login, paste this code into the command line that asked you to log in:</p>
<code>{{.}}</code>
{{- else}}
<p>The login failed: {{.Parameters.Get "error_description"}}</p>
{{- end}}
</div>
<script>` + formPostScript + `</script>
</body>
</html>
`))

// setFormPostHeaders sets the headers of the form_post page when ar asks for that response mode.
func setFormPostHeaders(w http.ResponseWriter, ar fosite.AuthorizeRequester) {
	if ar.GetResponseMode() != fosite.ResponseModeFormPost {
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", formPostScriptCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}
