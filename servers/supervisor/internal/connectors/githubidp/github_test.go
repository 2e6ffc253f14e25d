package githubidp

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
)

// The whole web flow and API against the GitHub double are tested in fixtures/github (core may
// not import fixtures); these tests cover configuration and answers the double never gives.

func TestURLs(t *testing.T) {
	tests := []struct {
		host, web, api, err string
	}{
		{host: "github.com", web: "https://github.com", api: "https://api.github.com"},
		{host: "GitHub.com:443", web: "https://github.com", api: "https://api.github.com"},
		{host: "api.github.com", web: "https://github.com", api: "https://api.github.com"},
		{host: "github.com:8443", web: "https://github.com:8443", api: "https://github.com:8443/api/v3"},
		{host: "ghe.example.com", web: "https://ghe.example.com", api: "https://ghe.example.com/api/v3"},
		{host: "ghe.example.com:443", web: "https://ghe.example.com", api: "https://ghe.example.com/api/v3"},
		{host: "10.0.0.5:8443", web: "https://10.0.0.5:8443", api: "https://10.0.0.5:8443/api/v3"},
		{host: "[::1]:8443", web: "https://[::1]:8443", api: "https://[::1]:8443/api/v3"},
		{host: "[::1]", web: "https://[::1]", api: "https://[::1]/api/v3"},
		{host: "", err: "must not be empty"},
		{host: "https://ghe.example.com", err: "without a scheme or path"},
		{host: "ghe.example.com/api", err: "without a scheme or path"},
		{host: "ghe.example.com:0", err: "port must be"},
		{host: "ghe.example.com:http", err: "port must be"},
		{host: "::1", web: "https://[::1]", api: "https://[::1]/api/v3"},
		{host: "[::1]:http", err: "port must be"},
		{host: "bad_name.example.com", err: "not a DNS name"},
		{host: "-bad.example.com", err: "not a DNS name"},
		{host: "a..b", err: "not a DNS name"},
	}
	for _, tt := range tests {
		web, api, err := URLs(tt.host)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("URLs(%q): err %v, want one containing %q", tt.host, err, tt.err)
			}
			continue
		}
		if err != nil || web != tt.web || api != tt.api {
			t.Errorf("URLs(%q) = %q, %q, %v; want %q, %q", tt.host, web, api, err, tt.web, tt.api)
		}
	}
}

func TestNewValidatesAndDefaults(t *testing.T) {
	ok := Config{ClientID: "id", ClientSecret: "secret", AllowedOrganizations: []string{"seals"}}
	p, err := New(ok)
	if err != nil {
		t.Fatal(err)
	}
	if p.cfg.Host != DefaultHost || p.cfg.UsernameAttribute != idpv1alpha1.GitHubUsernameLoginAndID ||
		p.cfg.GroupNameAttribute != idpv1alpha1.GitHubGroupNameSlug ||
		p.cfg.Policy != idpv1alpha1.GitHubAllowedAuthOrganizationsPolicyOnlyUsersFromAllowedOrganizations {
		t.Errorf("defaults: %+v", p.cfg)
	}
	if p.ClientID() != "id" || p.APIBaseURL() != "https://api.github.com" {
		t.Errorf("client ID %q, API %q", p.ClientID(), p.APIBaseURL())
	}
	authorize, err := url.Parse(p.AuthorizeURL("https://sup.example.com/issuer/callback", "st"))
	if err != nil {
		t.Fatal(err)
	}
	q := authorize.Query()
	if authorize.Host != "github.com" || authorize.Path != "/login/oauth/authorize" || q.Get("client_id") != "id" ||
		q.Get("redirect_uri") != "https://sup.example.com/issuer/callback" || q.Get("state") != "st" ||
		q.Get("scope") != "read:user read:org" || q.Get("response_type") != "code" {
		t.Errorf("authorize URL %s", authorize)
	}

	all := idpv1alpha1.GitHubAllowedAuthOrganizationsPolicyAllGitHubUsers
	only := idpv1alpha1.GitHubAllowedAuthOrganizationsPolicyOnlyUsersFromAllowedOrganizations
	bad := map[string]func(*Config){
		"no client secret":       func(c *Config) { c.ClientSecret = "" },
		"no client ID":           func(c *Config) { c.ClientID = "" },
		"unknown username":       func(c *Config) { c.UsernameAttribute = "email" },
		"unknown groups":         func(c *Config) { c.GroupNameAttribute = "id" },
		"unknown policy":         func(c *Config) { c.Policy = "Everyone" },
		"all users with allowed": func(c *Config) { c.Policy = all },
		"only allowed, none":     func(c *Config) { c.Policy = only; c.AllowedOrganizations = nil },
		"default policy, none":   func(c *Config) { c.AllowedOrganizations = nil },
		"bad host":               func(c *Config) { c.Host = "https://github.com" },
	}
	for name, change := range bad {
		cfg := ok
		change(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	if _, err := New(Config{ClientID: "id", ClientSecret: "s", Policy: all}); err != nil {
		t.Errorf("all GitHub users without organizations: %v", err)
	}
}

func TestNextLink(t *testing.T) {
	tests := map[string]string{
		"": "",
		`<https://x/api/v3/user/orgs?page=2>; rel="next", <https://x/api/v3/user/orgs?page=5>; rel="last"`: "https://x/api/v3/user/orgs?page=2",
		`<https://x/a?page=1>; rel="prev", <https://x/a?page=3>; rel=next`:                                 "https://x/a?page=3",
		`<https://x/a?page=1>; rel="first"`:                                                                "",
		`garbage; rel="next"`:                                                                              "",
	}
	for header, want := range tests {
		if got := nextLink(header); got != want {
			t.Errorf("nextLink(%q) = %q, want %q", header, got, want)
		}
	}
}

func TestNewHTTPClientRejectsGarbage(t *testing.T) {
	if _, err := NewHTTPClient([]byte("not PEM"), connectors.Settings{}); err == nil {
		t.Error("a bundle without certificates must be refused")
	}
}

// fakeAPI serves handlers below /api/v3 and returns a Provider for it with the given allowed
// organizations (none: all GitHub users).
func fakeAPI(t *testing.T, allowed []string, handlers map[string]http.HandlerFunc) *Provider {
	t.Helper()
	mux := http.NewServeMux()
	for path, h := range handlers {
		mux.HandleFunc("/api/v3"+path, h)
	}
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	cfg := Config{Host: srv.Listener.Addr().String(), ClientID: "id", ClientSecret: "s", HTTPClient: srv.Client(), AllowedOrganizations: allowed}
	if len(allowed) == 0 {
		cfg.Policy = idpv1alpha1.GitHubAllowedAuthOrganizationsPolicyAllGitHubUsers
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func body(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(s)) }
}

func TestGetUserSendsAPIHeaders(t *testing.T) {
	var checked atomic.Int32
	check := func(next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-GitHub-Api-Version") != APIVersion || r.Header.Get("Authorization") != "Bearer tok" ||
				r.Header.Get("Accept") != "application/vnd.github+json" || r.URL.Query().Get("per_page") != "" && r.URL.Query().Get("per_page") != "100" {
				t.Errorf("%s: headers %v, query %q", r.URL.Path, r.Header, r.URL.RawQuery)
			}
			checked.Add(1)
			next(w, r)
		}
	}
	p := fakeAPI(t, []string{"seals"}, map[string]http.HandlerFunc{
		"/user":       check(body(`{"login":"pinny","id":5}`)),
		"/user/orgs":  check(body(`[{"login":"seals"}]`)),
		"/user/teams": check(body(`[]`)),
	})
	id, err := p.GetUser(t.Context(), "tok", "gh")
	if err != nil {
		t.Fatal(err)
	}
	if checked.Load() != 3 || id.Username != "pinny:5" || len(id.Groups) != 0 {
		t.Errorf("%d requests, identity %+v", checked.Load(), id)
	}
}

func TestGetUserRejectsBadAnswers(t *testing.T) {
	user := body(`{"login":"pinny","id":5}`)
	orgs := body(`[{"login":"seals"}]`)
	tests := []struct {
		name     string
		handlers map[string]http.HandlerFunc
		want     string
	}{
		{"user without id", map[string]http.HandlerFunc{"/user": body(`{"login":"pinny"}`)}, `"id" attribute is missing`},
		{"user without login", map[string]http.HandlerFunc{"/user": body(`{"id":5}`)}, `"login" attribute is missing`},
		{"user not JSON", map[string]http.HandlerFunc{"/user": body(`<html>`)}, "decoding the response"},
		{"server error without JSON", map[string]http.HandlerFunc{"/user": func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
		}}, "answered 502: Bad Gateway"},
		{"organization without login", map[string]http.HandlerFunc{"/user": user, "/user/orgs": body(`[{"id":1}]`)}, `missing the "login"`},
		{"team without organization", map[string]http.HandlerFunc{"/user": user, "/user/orgs": orgs, "/user/teams": body(`[{"slug":"a","name":"A"}]`)}, "missing its organization"},
		{"team without slug", map[string]http.HandlerFunc{"/user": user, "/user/orgs": orgs, "/user/teams": body(`[{"name":"A","organization":{"login":"seals"}}]`)}, `"name" or "slug"`},
		{"parent without slug", map[string]http.HandlerFunc{"/user": user, "/user/orgs": orgs, "/user/teams": body(`[{"slug":"a","name":"A","organization":{"login":"seals"},"parent":{"name":"P"}}]`)}, "the parent of team"},
		{"next page elsewhere", map[string]http.HandlerFunc{"/user": user, "/user/orgs": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Link", `<https://evil.example.com/api/v3/user/orgs?page=2>; rel="next"`)
			_, _ = w.Write([]byte(`[{"login":"other"}]`))
		}}, "is not below"},
		{"endless pages", map[string]http.HandlerFunc{"/user": user, "/user/orgs": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", fmt.Sprintf(`<https://%s%s?page=2>; rel="next"`, r.Host, r.URL.Path))
			_, _ = w.Write([]byte(`[{"login":"other"}]`))
		}}, "more than 100 pages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fakeAPI(t, []string{"seals"}, tt.handlers)
			_, err := p.GetUser(t.Context(), "tok", "gh")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestGetUserWithoutAllowedOrganizationsSkipsTheOrganizationList(t *testing.T) {
	p := fakeAPI(t, nil, map[string]http.HandlerFunc{
		"/user":       body(`{"login":"Pinny","id":5}`),
		"/user/orgs":  func(w http.ResponseWriter, _ *http.Request) { t.Error("organizations were listed") },
		"/user/teams": body(`[{"slug":"a","name":"A","organization":{"login":"anyorg"}}]`),
	})
	id, err := p.GetUser(t.Context(), "tok", "my idp&co")
	if err != nil {
		t.Fatal(err)
	}
	want := p.APIBaseURL() + "?idpName=my+idp%26co&login=Pinny&id=5"
	if id.Subject != want || fmt.Sprint(id.Groups) != "[anyorg/a]" {
		t.Errorf("identity %+v, want subject %q and group anyorg/a", id, want)
	}
	if _, err := p.GetUser(t.Context(), "", "gh"); err == nil {
		t.Error("an empty token must be refused")
	}
	if _, err := p.Refresh(t.Context(), "tok", "gh", id.Subject); !errors.Is(err, ErrSubjectChanged) {
		t.Errorf("refresh under another display name: %v, want ErrSubjectChanged", err)
	}
}
