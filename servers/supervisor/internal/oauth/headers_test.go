package oauth

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/loginpages"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/securityheaders"
)

// pageHeaders is Pinniped's security header set with the policy csp; cacheControl is fosite's
// no-store where fosite wrote the response.
func pageHeaders(csp, cacheControl string) http.Header {
	h := http.Header{
		"Content-Security-Policy": {csp},
		"X-Frame-Options":         {"DENY"},
		"X-Xss-Protection":        {"1; mode=block"},
		"X-Content-Type-Options":  {"nosniff"},
		"Referrer-Policy":         {"no-referrer"},
		"X-Dns-Prefetch-Control":  {"off"},
		"Cache-Control":           {"no-cache,no-store,max-age=0,must-revalidate"},
		"Pragma":                  {"no-cache"},
		"Expires":                 {"0"},
	}
	if cacheControl != "" {
		h.Set("Cache-Control", cacheControl)
	}
	return h
}

// with returns h with the headers of more added.
func with(h http.Header, more ...string) http.Header {
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	for i := 0; i < len(more); i += 2 {
		h.Add(more[i], more[i+1])
	}
	return h
}

// Headers whose values change from response to response; a case names them to have them present.
var variableHeaders = []string{"Date", "Content-Length", "Location", "Set-Cookie"}

const (
	textPlain = "text/plain; charset=utf-8"
	jsonType  = "application/json"
	fositeJS  = "application/json;charset=UTF-8"
	fositeHTM = "text/html;charset=UTF-8"
	ourHTML   = "text/html; charset=utf-8"
)

// Every endpoint of an issuer answers with exactly the headers Pinniped's answers with: the
// browser's endpoints with its security headers and the policy of the page each serves, on
// success and on error alike; discovery, the JWKS and the token endpoint with none. Every HTML
// page's policy allows exactly its inline scripts and styles.
func TestSecurityHeaders(t *testing.T) {
	ups := &fakeUpstreams{}
	ups.add(issuer.TypeLDAP, "corp-ldap", newFakeDirectory())
	h := newHarnessWith(t, ups, ldapIDP(issuer.TypeLDAP), issuer.IdentityProvider{
		DisplayName: idpName, Type: issuer.TypeOIDC, Flows: []issuer.Flow{issuer.FlowBrowserAuthcode},
		Kind: "OIDCIdentityProvider", Name: "upstream-idp", UID: "idp-uid",
	})
	noFollow := &http.Client{Jar: h.browser.Jar, Transport: h.browser.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, u string, form url.Values) *http.Response {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequestWithContext(h.ctx, method, u, body)
		if err != nil {
			t.Fatal(err)
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	authURL := func(idp string, extra ...oauth2.AuthCodeOption) string {
		l := newLogin()
		opts := append([]oauth2.AuthCodeOption{oidc.Nonce(l.nonce), oauth2.S256ChallengeOption(l.verifier)}, extra...)
		if idp != "" {
			opts = append(opts, oauth2.SetAuthURLParam("pinniped_idp_name", idp))
		}
		return h.cli().AuthCodeURL(l.state, opts...)
	}
	formPost := oauth2.SetAuthURLParam("response_mode", "form_post")
	// loginState starts a browser login at the LDAP identity provider and returns the login form's state.
	loginState := func(extra ...oauth2.AuthCodeOption) string {
		t.Helper()
		resp := send(http.MethodGet, authURL(ldapIDPName, extra...), nil)
		_ = resp.Body.Close()
		loc, err := resp.Location()
		if err != nil || loc.Path != "/fd"+provider.LoginPath {
			t.Fatalf("authorize answered %s to %v; want the login form", resp.Status, loc)
		}
		return loc.Query().Get("state")
	}
	credentials := func(state string) url.Values {
		return url.Values{"state": {state}, "username": {"pinny"}, "password": {"pinny-password"}}
	}
	formPostPage := pageHeaders(provider.FormPostPolicy, "no-store")
	authorizePage := pageHeaders(provider.FormPostPolicy, "")

	for _, c := range []struct {
		name    string
		do      func() *http.Response
		status  int
		headers http.Header
	}{{
		name: "discovery", status: http.StatusOK, headers: with(nil, "Content-Type", jsonType),
		do: func() *http.Response {
			return send(http.MethodGet, h.issuerURL+"/.well-known/openid-configuration", nil)
		},
	}, {
		name: "discovery refuses POST", status: http.StatusMethodNotAllowed,
		headers: with(nil, "Content-Type", textPlain, "X-Content-Type-Options", "nosniff", "Allow", "GET"),
		do: func() *http.Response {
			return send(http.MethodPost, h.issuerURL+"/.well-known/openid-configuration", url.Values{})
		},
	}, {
		name: "JWKS", status: http.StatusOK, headers: with(nil, "Content-Type", jsonType),
		do: func() *http.Response { return send(http.MethodGet, h.issuerURL+"/jwks.json", nil) },
	}, {
		name: "IDP discovery", status: http.StatusOK, headers: with(nil, "Content-Type", jsonType),
		do: func() *http.Response {
			return send(http.MethodGet, h.issuerURL+"/v1alpha1/pinniped_identity_providers", nil)
		},
	}, {
		name: "unknown path", status: http.StatusNotFound, headers: with(nil, "Content-Type", textPlain, "X-Content-Type-Options", "nosniff"),
		do: func() *http.Response { return send(http.MethodGet, h.issuerURL+"/no-such-endpoint", nil) },
	}, {
		name: "authorize sends to the chooser", status: http.StatusSeeOther,
		headers: with(authorizePage, "Content-Type", ourHTML, "Location", ""),
		do:      func() *http.Response { return send(http.MethodGet, authURL(""), nil) },
	}, {
		name: "authorize sends to the login form", status: http.StatusSeeOther,
		headers: with(authorizePage, "Content-Type", ourHTML, "Location", "", "Set-Cookie", ""),
		do:      func() *http.Response { return send(http.MethodGet, authURL(ldapIDPName), nil) },
	}, {
		name: "authorize by POST", status: http.StatusSeeOther,
		headers: with(authorizePage, "Location", "", "Set-Cookie", ""),
		do: func() *http.Response {
			u, _ := url.Parse(authURL(ldapIDPName))
			return send(http.MethodPost, h.issuerURL+provider.AuthorizePath, u.Query())
		},
	}, {
		name: "authorize refuses an unknown client", status: http.StatusUnauthorized,
		headers: with(pageHeaders(provider.FormPostPolicy, "no-store"), "Content-Type", fositeJS),
		do: func() *http.Response {
			return send(http.MethodGet, h.issuerURL+provider.AuthorizePath+"?client_id=nobody", nil)
		},
	}, {
		name: "authorize error as the form_post page", status: http.StatusOK,
		headers: with(formPostPage, "Content-Type", fositeHTM),
		do: func() *http.Response {
			return send(http.MethodGet, authURL(ldapIDPName, formPost, oauth2.SetAuthURLParam("prompt", "none")), nil)
		},
	}, {
		name: "authorize refuses PUT", status: http.StatusMethodNotAllowed,
		headers: with(authorizePage, "Content-Type", textPlain),
		do:      func() *http.Response { return send(http.MethodPut, h.issuerURL+provider.AuthorizePath, url.Values{}) },
	}, {
		name: "cli_password login", status: http.StatusFound,
		headers: with(pageHeaders(provider.FormPostPolicy, "no-store"), "Location", ""),
		do: func() *http.Response {
			req, _ := http.NewRequestWithContext(h.ctx, http.MethodGet, authURL(ldapIDPName), nil)
			req.Header.Set(usernameHeader, "pinny")
			req.Header.Set(passwordHeader, "pinny-password")
			resp, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		},
	}, {
		name: "chooser", status: http.StatusOK, headers: with(pageHeaders(loginpages.ChooserPolicy, ""), "Content-Type", ourHTML),
		do: func() *http.Response {
			u, _ := url.Parse(authURL(""))
			return send(http.MethodGet, h.issuerURL+provider.ChooseIdentityProviderPath+"?"+u.RawQuery, nil)
		},
	}, {
		name: "chooser refuses an invalid request", status: http.StatusUnauthorized,
		headers: with(pageHeaders(loginpages.ChooserPolicy, "no-store"), "Content-Type", fositeJS),
		do: func() *http.Response {
			return send(http.MethodGet, h.issuerURL+provider.ChooseIdentityProviderPath+"?client_id=nobody", nil)
		},
	}, {
		name: "chooser error as the form_post page", status: http.StatusOK, headers: with(formPostPage, "Content-Type", fositeHTM),
		do: func() *http.Response {
			u, _ := url.Parse(authURL("", formPost, oauth2.SetAuthURLParam("scope", "openid no-such-scope")))
			return send(http.MethodGet, h.issuerURL+provider.ChooseIdentityProviderPath+"?"+u.RawQuery, nil)
		},
	}, {
		name: "login form", status: http.StatusOK, headers: with(pageHeaders(loginpages.LoginPolicy, ""), "Content-Type", ourHTML),
		do: func() *http.Response {
			return send(http.MethodGet, h.issuerURL+provider.LoginPath+"?state="+url.QueryEscape(loginState()), nil)
		},
	}, {
		name: "login form with a bad state", status: http.StatusBadRequest,
		headers: with(pageHeaders(loginpages.LoginPolicy, ""), "Content-Type", textPlain),
		do:      func() *http.Response { return send(http.MethodGet, h.issuerURL+provider.LoginPath+"?state=bad", nil) },
	}, {
		name: "login form posted with a bad state", status: http.StatusBadRequest,
		headers: with(pageHeaders(provider.FormPostPolicy, ""), "Content-Type", textPlain),
		do: func() *http.Response {
			return send(http.MethodPost, h.issuerURL+provider.LoginPath, credentials("bad"))
		},
	}, {
		name: "login form posted with a wrong password", status: http.StatusSeeOther,
		headers: with(pageHeaders(provider.FormPostPolicy, ""), "Location", ""),
		do: func() *http.Response {
			form := credentials(loginState())
			form.Set("password", "wrong")
			return send(http.MethodPost, h.issuerURL+provider.LoginPath, form)
		},
	}, {
		name: "login answered with the form_post page", status: http.StatusOK, headers: with(formPostPage, "Content-Type", fositeHTM),
		do: func() *http.Response {
			return send(http.MethodPost, h.issuerURL+provider.LoginPath, credentials(loginState(formPost)))
		},
	}, {
		name: "login answered with a redirect", status: http.StatusSeeOther, headers: with(formPostPage, "Location", ""),
		do: func() *http.Response {
			return send(http.MethodPost, h.issuerURL+provider.LoginPath, credentials(loginState()))
		},
	}, {
		name: "login refuses PUT", status: http.StatusMethodNotAllowed,
		headers: with(pageHeaders(loginpages.LoginPolicy, ""), "Content-Type", textPlain),
		do:      func() *http.Response { return send(http.MethodPut, h.issuerURL+provider.LoginPath, url.Values{}) },
	}, {
		name: "callback with a bad state", status: http.StatusBadRequest,
		headers: with(authorizePage, "Content-Type", textPlain),
		do: func() *http.Response {
			return send(http.MethodGet, h.issuerURL+provider.CallbackPath+"?state=bad&code=c", nil)
		},
	}, {
		name: "callback answers the client", status: http.StatusSeeOther, headers: with(formPostPage, "Location", ""),
		do: func() *http.Response {
			loc, resp := h.authorize(authURL(idpName))
			if loc == nil || resp.Request.URL.Path != "/fd"+provider.CallbackPath {
				t.Fatalf("the login ended at %s with %s; want the callback's redirect to the CLI", resp.Request.URL, resp.Status)
			}
			return resp
		},
	}, {
		name: "token refuses a bad code", status: http.StatusBadRequest,
		headers: with(nil, "Content-Type", fositeJS, "Cache-Control", "no-store", "Pragma", "no-cache"),
		do: func() *http.Response {
			return send(http.MethodPost, h.issuerURL+provider.TokenPath, url.Values{"grant_type": {"authorization_code"}, "code": {"bad"},
				"client_id": {provider.PinnipedCLIClientID}, "redirect_uri": {cliCallback}, "code_verifier": {oauth2.GenerateVerifier()}})
		},
	}, {
		name: "token", status: http.StatusOK,
		headers: with(nil, "Content-Type", fositeJS, "Cache-Control", "no-store", "Pragma", "no-cache"),
		do: func() *http.Response {
			l := h.login()
			return send(http.MethodPost, h.issuerURL+provider.TokenPath, url.Values{"grant_type": {"authorization_code"}, "code": {l.code},
				"client_id": {provider.PinnipedCLIClientID}, "redirect_uri": {cliCallback}, "code_verifier": {l.verifier}})
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			resp := c.do()
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("status %s, want %d:\n%s", resp.Status, c.status, body)
			}
			got := resp.Header.Clone()
			for _, name := range variableHeaders {
				if _, wanted := c.headers[name]; wanted && got.Get(name) == "" {
					t.Errorf("no %s header", name)
				}
				got.Del(name)
			}
			want := c.headers.Clone()
			for _, name := range variableHeaders {
				want.Del(name)
			}
			for name := range mergeKeys(got, want) {
				if !slices.Equal(got.Values(name), want.Values(name)) {
					t.Errorf("%s: %q, want %q", name, got.Values(name), want.Values(name))
				}
			}
			if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
				checkPagePolicy(t, string(body), resp.Header.Get("Content-Security-Policy"))
			}
		})
	}
}

func mergeKeys(a, b http.Header) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

// checkPagePolicy fails unless policy allows each inline script and style of page, as served,
// by its hash: a page edited so that its text no longer matches what the policy was computed
// from (a template action inside a script, say) would not run in the browser.
func checkPagePolicy(t *testing.T, page, policy string) {
	t.Helper()
	directives := map[string][]string{}
	for _, d := range strings.Split(policy, ";") {
		if fields := strings.Fields(d); len(fields) > 0 {
			directives[fields[0]] = fields[1:]
		}
	}
	scripts, styles := securityheaders.Hashes(page)
	for _, c := range []struct {
		directive string
		hashes    []string
	}{{"script-src", scripts}, {"style-src", styles}} {
		for _, hash := range c.hashes {
			if !slices.Contains(directives[c.directive], hash) {
				t.Errorf("the policy %q does not allow the page's inline %s %s:\n%s", policy, c.directive, hash, page)
			}
		}
	}
	if len(scripts)+len(styles) == 0 {
		t.Errorf("a page without inline script or style; was it read?\n%s", page)
	}
}
