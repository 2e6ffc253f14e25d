// Package securityheaders sets the security headers of the Supervisor's browser-facing endpoints
// (authorize, callback, the login form and the identity provider chooser), the set Pinniped
// sends: a Content-Security-Policy that lets a page run only its own inline script and style,
// named by their hashes, and headers that keep the responses out of frames, caches, referrers and
// content sniffing. Discovery, the JWKS and the token endpoint are not browser pages and, as in
// Pinniped, get none of them.
package securityheaders

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"

	"golang.org/x/net/html"
)

// Wrap serves h with the security headers and the Content-Security-Policy csp. They are set
// before h runs, so that h may still replace one: fosite, writing an OAuth response or error,
// sets Cache-Control: no-store and Pragma: no-cache, as it does under Pinniped.
func Wrap(h http.Handler, csp string) http.Handler {
	return WrapPost(h, csp, csp)
}

// WrapPost is Wrap with the policy post for POST requests: the login form is posted to its own
// URL, which answers with the form_post page, not the form.
func WrapPost(h http.Handler, csp, post string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		policy := csp
		if r.Method == http.MethodPost {
			policy = post
		}
		hd := w.Header()
		SetPolicy(hd, policy)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-XSS-Protection", "1; mode=block")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-DNS-Prefetch-Control", "off")
		hd.Set("Cache-Control", "no-cache,no-store,max-age=0,must-revalidate")
		hd.Set("Pragma", "no-cache")
		hd.Set("Expires", "0")
		h.ServeHTTP(w, r)
	})
}

// SetPolicy replaces the Content-Security-Policy of a response that turns out to be another page
// than its endpoint's own: an OAuth error answered with the form_post page, say.
func SetPolicy(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
}

// Policy returns the Content-Security-Policy of the HTML page: nothing may be loaded or run
// (default-src 'none') but the page's own inline scripts and styles, by the sha256 hashes of
// their text, and what the extra directives allow; no page may frame it. Hashes rather than
// 'unsafe-inline' keep a markup injection from running script.
func Policy(page string, extra ...string) string {
	scripts, styles := Hashes(page)
	directives := []string{"default-src 'none'"}
	if len(scripts) > 0 {
		directives = append(directives, "script-src "+strings.Join(scripts, " "))
	}
	if len(styles) > 0 {
		directives = append(directives, "style-src "+strings.Join(styles, " "))
	}
	directives = append(directives, extra...)
	directives = append(directives, "frame-ancestors 'none'")
	return strings.Join(directives, "; ")
}

// Hashes returns the CSP sources that allow the inline <script> and <style> elements of the HTML
// page, in their order: the hashes of their text as the browser hashes it, the raw characters
// between the tags (line breaks normalized to \n, as the browser's parser does).
func Hashes(page string) (scripts, styles []string) {
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return scripts, styles
		case html.StartTagToken:
			name, _ := z.TagName()
			var into *[]string
			switch string(name) {
			case "script":
				into = &scripts
			case "style":
				into = &styles
			default:
				continue
			}
			text := ""
			if z.Next() == html.TextToken {
				text = string(z.Text())
			}
			*into = append(*into, hash(text))
		}
	}
}

// hash is the CSP source that allows an inline script or style whose text is text.
func hash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}
