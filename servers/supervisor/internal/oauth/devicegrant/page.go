package devicegrant

import (
	"html/template"
	"net/http"

	"sealion.dev/servers/supervisor/internal/oauth/securityheaders"
)

// page is what the verification page shows: the form for the user code, the request to approve
// (Confirm), or only a message at the end.
type page struct {
	Action, CSRF, UserCode string
	Error, Message         string
	Confirm                bool
	Client                 string
	Scopes                 []string
}

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in a device</title>
<style>
body { font-family: sans-serif; max-width: 26em; margin: 4em auto; padding: 0 1em; }
label, input, button { display: block; width: 100%; box-sizing: border-box; margin-top: .5em; }
input, button { padding: .5em; font-size: 1em; }
input[name=user_code] { font-family: monospace; font-size: 1.4em; letter-spacing: .1em; text-transform: uppercase; }
.error { color: #a00; }
code { font-size: 1.1em; }
</style>
</head>
<body>
<h1>Log in a device</h1>
{{if .Message}}<p id="message" role="status">{{.Message}}</p>
{{else if .Confirm}}<p>Code <code>{{.UserCode}}</code>: the client <strong id="client">{{.Client}}</strong> asks to act as you{{if .Scopes}}, with the scopes{{end}}</p>
{{if .Scopes}}<ul id="scopes">{{range .Scopes}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
<p>Approve only if you started this login yourself, on a device you trust.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<input type="hidden" name="user_code" value="{{.UserCode}}">
<button type="submit" name="action" value="approve" id="approve">Approve and log in</button>
<button type="submit" name="action" value="deny" id="deny">Deny</button>
</form>
{{else}}{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<label for="user_code">Enter the code your device shows</label>
<input type="text" id="user_code" name="user_code" value="{{.UserCode}}" autocomplete="off" autocapitalize="characters" spellcheck="false" required autofocus>
<button type="submit" id="continue">Continue</button>
</form>
{{end}}</body>
</html>
`

var tmpl = template.Must(template.New("device").Parse(pageHTML))

// Policy is the Content-Security-Policy of the verification page: its own style, no script.
var Policy = securityheaders.Policy(pageHTML)

func (p endpoints) render(w http.ResponseWriter, status int, v page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = tmpl.Execute(w, v)
}
