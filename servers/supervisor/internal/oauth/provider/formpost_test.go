package provider

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/ory/fosite"
)

func TestFormPostPage(t *testing.T) {
	var b strings.Builder
	fosite.WriteAuthorizeFormPostResponse("http://127.0.0.1:4242/callback",
		url.Values{"code": {"the-code"}, "state": {`"><script>alert(1)</script>`}}, formPostPage, &b)
	page := b.String()
	for _, want := range []string{
		`<form id="response" method="post" action="http://127.0.0.1:4242/callback">`,
		`<input type="hidden" name="code" value="the-code">`,
		`<code>the-code</code>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script>alert") {
		t.Errorf("a parameter was not escaped:\n%s", page)
	}

	// The policy allows exactly the page's script.
	start := strings.Index(page, "<script>") + len("<script>")
	end := strings.Index(page, "</script>")
	sum := sha256.Sum256([]byte(page[start:end]))
	rec := httptest.NewRecorder()
	setFormPostHeaders(rec, &fosite.AuthorizeRequest{ResponseMode: fosite.ResponseModeFormPost})
	csp := rec.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") {
		t.Errorf("the policy %q does not allow the page's script", csp)
	}

	failed := strings.Builder{}
	fosite.WriteAuthorizeFormPostResponse("http://127.0.0.1:4242/callback",
		url.Values{"error": {"access_denied"}, "error_description": {"no <b>entry</b>"}}, formPostPage, &failed)
	if !strings.Contains(failed.String(), "The login failed: no &lt;b&gt;entry&lt;/b&gt;") {
		t.Errorf("error page:\n%s", failed.String())
	}

	rec = httptest.NewRecorder()
	setFormPostHeaders(rec, &fosite.AuthorizeRequest{ResponseMode: fosite.ResponseModeQuery})
	if len(rec.Header()) != 0 {
		t.Errorf("headers set for a query response: %v", rec.Header())
	}
}
