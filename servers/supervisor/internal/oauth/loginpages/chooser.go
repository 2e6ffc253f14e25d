package loginpages

import (
	"html/template"
	"net/http"
	"net/url"
	"slices"

	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/securityheaders"
)

// chooseIdentityProvider lists the identity providers a browser can log in with, each linking to
// the authorize request it was sent here with (its query), naming that identity provider.
func (p pages) chooseIdentityProvider(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !provider.AllowMethods(w, r, http.MethodGet) {
		return
	}
	// Only a valid authorize request gets a page: its links must lead somewhere.
	down := r.Clone(ctx)
	down.URL = &url.URL{Path: p.Issuer.Path(provider.AuthorizePath), RawQuery: r.URL.RawQuery}
	down.Form, down.PostForm = nil, nil
	ar, err := p.OAuth.NewAuthorizeRequest(ctx, down)
	if err != nil {
		p.AuthorizeError(ctx, w, ar, err, false)
		return
	}
	type choice struct{ Name, Type, URL string }
	var choices []choice
	for _, idp := range p.Issuer.IdentityProviders {
		if !slices.Contains(idp.Flows, issuer.FlowBrowserAuthcode) {
			continue
		}
		q := ar.GetRequestForm()
		q.Set("pinniped_idp_name", idp.DisplayName)
		q.Set("pinniped_idp_type", string(idp.Type))
		u := url.URL{Path: p.Issuer.Path(provider.AuthorizePath), RawQuery: q.Encode()}
		choices = append(choices, choice{Name: idp.DisplayName, Type: string(idp.Type), URL: u.String()})
	}
	setContentType(w)
	_ = chooserPage.Execute(w, choices)
}

const chooserHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Choose an identity provider</title>
<style>
body { font-family: sans-serif; max-width: 24em; margin: 4em auto; padding: 0 1em; }
a { display: block; margin-top: .5em; padding: .5em; border: 1px solid #888; text-decoration: none; }
</style>
</head>
<body>
<h1>Log in with</h1>
{{range .}}<a href="{{.URL}}" data-type="{{.Type}}">{{.Name}}</a>
{{else}}<p>No identity provider is available.</p>
{{end}}</body>
</html>
`

var chooserPage = template.Must(template.New("chooser").Parse(chooserHTML))

// ChooserPolicy is the Content-Security-Policy of the chooser: its own style, no script (its
// choices are plain links).
var ChooserPolicy = securityheaders.Policy(chooserHTML)
