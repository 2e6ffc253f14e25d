package provider

import (
	"html/template"
	"net/http"

	"github.com/ory/fosite"

	"sealion.dev/servers/supervisor/internal/oauth/securityheaders"
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

const formPostHTML = `<!DOCTYPE html>
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
`

var formPostPage = template.Must(template.New("form_post").Parse(formPostHTML))

// FormPostPolicy is the Content-Security-Policy of the form_post page: its own script and style,
// and, as Pinniped's, connections anywhere: the script posts to the client's redirect URI, which
// an OIDCClient may have anywhere, not only on the CLI's loopback listener.
var FormPostPolicy = securityheaders.Policy(formPostHTML, "connect-src *")

// setFormPostPolicy gives the response the form_post page's policy when ar asks for that response
// mode: the endpoints that answer with the page have it already, but the chooser and the login
// form answer a request that no longer validates with an error, which fosite may write as the
// page.
func setFormPostPolicy(w http.ResponseWriter, ar fosite.AuthorizeRequester) {
	if ar.GetResponseMode() == fosite.ResponseModeFormPost {
		securityheaders.SetPolicy(w.Header(), FormPostPolicy)
	}
}
