package securityheaders

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
)

// The hashes are known answers, computed apart with openssl (printf '...' | openssl dgst -sha256
// -binary | base64): the browser compares them with its own, so they must be exact.
func TestPolicy(t *testing.T) {
	for _, c := range []struct {
		name, page string
		extra      []string
		want       string
	}{{
		name: "script and style",
		page: "<!DOCTYPE html><html><head><style>body { color: red; }\n</style></head>" +
			"<body><p>alert(2)</p><script>alert(1)</script></body></html>",
		extra: []string{"connect-src *"},
		want: "default-src 'none'; script-src 'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='; " +
			"style-src 'sha256-l2fpHp1LAzTlmh04npgBvGosXEpVAKPCx5FWh5ZbLBY='; connect-src *; frame-ancestors 'none'",
	}, {
		name: "CRLF is hashed as the browser's parser normalizes it",
		page: "<style>body { color: red; }\r\n</style>",
		want: "default-src 'none'; style-src 'sha256-l2fpHp1LAzTlmh04npgBvGosXEpVAKPCx5FWh5ZbLBY='; frame-ancestors 'none'",
	}, {
		name: "an entity in a script is not decoded: scripts are raw text",
		page: "<script>alert(1)</script><script></script><script>alert(&#49;)</script>",
		want: "default-src 'none'; script-src 'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI=' " +
			"'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=' " + hash("alert(&#49;)") + "; frame-ancestors 'none'",
	}, {
		name: "a page without inline code runs none",
		page: "<p>hello</p>",
		want: "default-src 'none'; frame-ancestors 'none'",
	}} {
		t.Run(c.name, func(t *testing.T) {
			if got := Policy(c.page, c.extra...); got != c.want {
				t.Errorf("Policy:\n got %s\nwant %s", got, c.want)
			}
		})
	}
	if scripts, _ := Hashes("<script>alert(&#49;)</script>"); slices.Contains(scripts, hash("alert(1)")) {
		t.Error("the entity was decoded")
	}
}

// Every response gets Pinniped's set, the policy chosen by the method; a handler may still
// replace a header, as fosite does with Cache-Control.
func TestWrapPost(t *testing.T) {
	h := WrapPost(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.Header().Set("Cache-Control", "no-store")
		}
		http.Error(w, "nope", http.StatusBadRequest)
	}), "get-policy", "post-policy")
	for method, want := range map[string]http.Header{
		http.MethodGet:  expected("get-policy", "no-cache,no-store,max-age=0,must-revalidate"),
		http.MethodPost: expected("post-policy", "no-cache,no-store,max-age=0,must-revalidate"),
		http.MethodPut:  expected("get-policy", "no-store"),
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/", nil))
		want.Set("Content-Type", "text/plain; charset=utf-8")
		if !reflect.DeepEqual(rec.Header(), want) {
			t.Errorf("%s: headers\n%v\nwant\n%v", method, rec.Header(), want)
		}
	}
}

func expected(csp, cacheControl string) http.Header {
	return http.Header{
		"Content-Security-Policy": {csp},
		"X-Frame-Options":         {"DENY"},
		"X-Xss-Protection":        {"1; mode=block"},
		"X-Content-Type-Options":  {"nosniff"},
		"Referrer-Policy":         {"no-referrer"},
		"X-Dns-Prefetch-Control":  {"off"},
		"Cache-Control":           {cacheControl},
		"Pragma":                  {"no-cache"},
		"Expires":                 {"0"},
	}
}
