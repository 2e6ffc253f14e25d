package oauth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// serve runs one request through the Supervisor's handler in-process, without a connection.
func (h *harness) serve(method, path, rawQuery, contentType, body string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, h.issuerURL+path, strings.NewReader(body))
	req.URL.RawQuery = rawQuery
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.server.Config.Handler.ServeHTTP(rec, req)
	return rec
}

// checkRedirect fails unless a redirect goes to one of the issuer's own pages, to the upstream
// identity provider, or with an error and no code to a redirect URI registered for pinniped-cli
// (http://127.0.0.1/callback or http://[::1]/callback, on any port).
func (h *harness) checkRedirect(t *testing.T, rec *httptest.ResponseRecorder, input string) {
	t.Helper()
	if rec.Code < 300 || rec.Code >= 400 {
		return
	}
	loc, err := url.Parse(rec.Header().Get("Location"))
	switch {
	case err != nil:
		t.Fatalf("%d to an unparsable Location %q for %q", rec.Code, rec.Header().Get("Location"), input)
	case loc.Scheme == "" && loc.Host == "" && strings.HasPrefix(loc.Path, "/fd/"):
	case strings.HasPrefix(loc.String(), h.upstream.server.URL+"/authorize?"):
	case loc.Scheme == "http" && (loc.Hostname() == "127.0.0.1" || loc.Hostname() == "::1") && loc.Path == "/callback" && loc.User == nil:
		if loc.Query().Get("code") != "" || loc.Query().Get("error") == "" {
			t.Fatalf("a redirect to the CLI with a code or without an error for %q: %s", input, loc)
		}
	default:
		t.Fatalf("%d to %s, which is not a registered redirect URI, for %q", rec.Code, loc, input)
	}
}

// FuzzAuthorizeQuery sends arbitrary query strings to the authorize endpoint. The answer is never
// a server error, and never a redirect anywhere but to the issuer's own pages, the upstream
// identity provider, or with an error to a redirect URI registered for the client.
func FuzzAuthorizeQuery(f *testing.F) {
	h := newHarness(f, nil)
	valid, err := url.Parse(h.cli().AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()),
		oauth2.SetAuthURLParam("nonce", "some-nonce-value"), oauth2.SetAuthURLParam("pinniped_idp_name", idpName)))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		valid.RawQuery,
		valid.RawQuery + "&redirect_uri=https://evil.example.com/callback",
		strings.Replace(valid.RawQuery, "127.0.0.1%3A12345", "127.0.0.1.evil.example.com", 1),
		strings.Replace(valid.RawQuery, "127.0.0.1%3A12345", "127.0.0.1%40evil.example.com", 1),
		strings.Replace(valid.RawQuery, "%2Fcallback", "%2Fcallback%2F..%2F..%2Fevil", 1),
		strings.Replace(valid.RawQuery, "pinniped-cli", "client.oauth.pinniped.dev-nope", 1),
		valid.RawQuery + "&prompt=none",
		valid.RawQuery + "&response_mode=form_post",
		valid.RawQuery + "&response_type=token",
		"response_type=code&client_id=pinniped-cli&redirect_uri=http://127.0.0.1/callback&scope=openid",
		"", "%zz", "client_id=%00&redirect_uri=%ff", ";;;&&&==",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, query string) {
		h.t = t
		rec := h.serve(http.MethodGet, provider.AuthorizePath, query, "", "")
		if rec.Code >= 500 {
			t.Fatalf("%d for %q: %s", rec.Code, query, rec.Body)
		}
		h.checkRedirect(t, rec, query)
	})
}

// FuzzTokenForm posts arbitrary forms to the token endpoint. Unless a form redeems something
// (only a seed could), the answer is a 4xx with an OAuth error JSON, never a server error.
func FuzzTokenForm(f *testing.F) {
	h := newHarness(f, nil)
	for _, seed := range []url.Values{
		{"grant_type": {provider.GrantAuthorizationCode}, "code": {"made-up"}, "code_verifier": {oauth2.GenerateVerifier()}, "client_id": {provider.PinnipedCLIClientID}, "redirect_uri": {cliCallback}},
		{"grant_type": {provider.GrantRefreshToken}, "refresh_token": {"made-up.signature"}, "client_id": {provider.PinnipedCLIClientID}},
		{"grant_type": {provider.GrantTokenExchange}, "client_id": {provider.PinnipedCLIClientID}, "audience": {"cluster"}, "subject_token": {"made-up"},
			"subject_token_type": {tokenTypeAccessToken}, "requested_token_type": {tokenTypeJWT}},
		{"grant_type": {"client_credentials"}, "client_id": {"client.oauth.pinniped.dev-x"}, "client_secret": {"s"}},
		{"grant_type": {provider.GrantAuthorizationCode, provider.GrantRefreshToken}},
	} {
		f.Add(seed.Encode())
	}
	for _, seed := range []string{"", "%zz", "grant_type", "&&&", "grant_type=authorization_code&code=a.b&code=c.d"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, form string) {
		h.t = t
		rec := h.serve(http.MethodPost, provider.TokenPath, "", "application/x-www-form-urlencoded", form)
		var answer struct {
			Error string `json:"error"`
		}
		err := json.Unmarshal(rec.Body.Bytes(), &answer)
		if rec.Code < 400 || rec.Code >= 500 || err != nil || answer.Error == "" {
			t.Fatalf("%d %q for %q; want a 4xx OAuth error", rec.Code, rec.Body, form)
		}
	})
}

// FuzzCallbackQuery sends arbitrary query strings to the callback endpoint from the browser that
// started a login, with a genuine upstream state among the seeds. The answer is never a server
// error; a state this issuer did not seal is a 4xx; and the only redirect is an error to the
// CLI (no upstream ever issued the fuzzed codes), never a code.
func FuzzCallbackQuery(f *testing.F) {
	h := newHarness(f, nil)
	noFollow := &http.Client{Jar: h.browser.Jar, Transport: h.browser.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(h.cli().AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if err != nil {
		f.Fatal(err)
	}
	_ = resp.Body.Close()
	upstream, err := resp.Location()
	if err != nil {
		f.Fatalf("authorize did not redirect upstream: %s", resp.Status)
	}
	state := upstream.Query().Get("state")
	sealed, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil {
		f.Fatal(err)
	}
	issuerURL, err := url.Parse(h.issuerURL)
	if err != nil {
		f.Fatal(err)
	}
	cookies := h.browser.Jar.Cookies(issuerURL)
	for _, seed := range []url.Values{
		{"state": {state}, "code": {"made-up"}},
		{"state": {state}, "error": {"access_denied"}, "error_description": {"no"}},
		{"state": {state + "A"}, "code": {"made-up"}},
		{"state": {state[:len(state)-2]}, "code": {"x"}},
		{"state": {"not-a-state"}, "code": {"x"}},
		{"state": {state, "other"}, "code": {"x"}},
	} {
		f.Add(seed.Encode())
	}
	for _, seed := range []string{"", "%zz", "state=&code="} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, query string) {
		h.t = t
		h.upstream.t = t
		rec := h.serve(http.MethodGet, provider.CallbackPath, query, "", "", cookies...)
		if rec.Code >= 500 {
			t.Fatalf("%d for %q: %s", rec.Code, query, rec.Body)
		}
		// Go's lenient base64 reads some other strings as the same sealed bytes; anything else
		// is not this issuer's state.
		q, _ := url.ParseQuery(query)
		if got, err := base64.RawURLEncoding.DecodeString(q.Get("state")); (err != nil || !bytes.Equal(got, sealed)) && (rec.Code < 400 || rec.Code >= 500) {
			t.Fatalf("%d for state %q, which this issuer did not seal", rec.Code, q.Get("state"))
		}
		if rec.Code >= 300 && rec.Code < 400 {
			if loc := rec.Header().Get("Location"); !strings.HasPrefix(loc, cliCallback+"?") {
				t.Fatalf("%d to %q for %q; want only errors to the CLI", rec.Code, loc, query)
			}
		}
		h.checkRedirect(t, rec, query)
	})
}
