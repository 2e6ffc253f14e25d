package provider

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/ory/fosite"

	"sealion.dev/servers/supervisor/internal/oauth/securityheaders"
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

	// The policy allows exactly the page's script and style, wherever it posts to.
	scripts, styles := securityheaders.Hashes(page)
	if len(scripts) != 1 || len(styles) != 1 {
		t.Fatalf("the page has %d scripts and %d styles, want one of each", len(scripts), len(styles))
	}
	if want := "default-src 'none'; script-src " + scripts[0] + "; style-src " + styles[0] + "; connect-src *; frame-ancestors 'none'"; FormPostPolicy != want {
		t.Errorf("policy %q, want %q", FormPostPolicy, want)
	}

	failed := strings.Builder{}
	fosite.WriteAuthorizeFormPostResponse("http://127.0.0.1:4242/callback",
		url.Values{"error": {"access_denied"}, "error_description": {"no <b>entry</b>"}}, formPostPage, &failed)
	if !strings.Contains(failed.String(), "The login failed: no &lt;b&gt;entry&lt;/b&gt;") {
		t.Errorf("error page:\n%s", failed.String())
	}

	rec := httptest.NewRecorder()
	setFormPostPolicy(rec, &fosite.AuthorizeRequest{ResponseMode: fosite.ResponseModeFormPost})
	if got := rec.Header().Get("Content-Security-Policy"); got != FormPostPolicy {
		t.Errorf("form_post response's policy %q", got)
	}
	rec = httptest.NewRecorder()
	setFormPostPolicy(rec, &fosite.AuthorizeRequest{ResponseMode: fosite.ResponseModeQuery})
	if len(rec.Header()) != 0 {
		t.Errorf("headers set for a query response: %v", rec.Header())
	}
}
