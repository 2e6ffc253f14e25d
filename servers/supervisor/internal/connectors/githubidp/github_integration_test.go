package githubidp_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/fixtures/github"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/githubidp"
)

// These tests run the Supervisor's GitHub client (this package) against the
// double: core may not import fixtures, so they live here.

const callback = "https://127.0.0.1:8443/issuer/callback"

var (
	alice = github.User{
		ID: 1001, Login: "alice", Password: "alice-pw",
		Orgs: []string{"Seals", "otters"},
		Teams: []github.Team{
			{Org: "Seals", Slug: "harbor", Name: "Harbor Seals", Parent: &github.Team{Org: "Seals", Slug: "all-seals", Name: "All Seals"}},
			{Org: "Seals", Slug: "all-seals", Name: "All Seals"},
			{Org: "otters", Slug: "sea", Name: "Sea Otters"},
		},
	}
	bob = github.User{ID: 1002, Login: "bob", Password: "bob-pw", Orgs: []string{"otters"},
		Teams: []github.Team{{Org: "otters", Slug: "river", Name: "River Otters"}}}
)

// loginAs runs the web flow for user as a browser would, through the login form, and returns
// the code from the redirect to the callback.
func loginAs(t *testing.T, client *http.Client, authorizeURL string, user github.User) string {
	t.Helper()
	c := *client
	c.Jar, _ = cookiejar.New(nil)
	c.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), callback) {
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, err := c.Get(authorizeURL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	returnTo := resp.Request.URL.Query().Get("return_to")
	// The form posts to the host that served it, github.com included.
	sessionURL := resp.Request.URL.ResolveReference(&url.URL{Path: "/session"}).String()
	resp, err = c.PostForm(sessionURL, url.Values{"login": {user.Login}, "password": {user.Password}, "return_to": {returnTo}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || loc.Query().Get("code") == "" {
		t.Fatalf("login as %s: status %d to %q", user.Login, resp.StatusCode, resp.Header.Get("Location"))
	}
	if loc.Query().Get("state") != "the-state" {
		t.Fatalf("state %q", loc.Query().Get("state"))
	}
	return loc.Query().Get("code")
}

func newProvider(t *testing.T, s *github.Server, cfg githubidp.Config) *githubidp.Provider {
	t.Helper()
	if cfg.Host == "" {
		cfg.Host = s.Host
	}
	cfg.ClientID, cfg.ClientSecret = github.DefaultClientID, github.DefaultClientSecret
	if cfg.HTTPClient == nil {
		var err error
		if cfg.HTTPClient, err = githubidp.NewHTTPClient(s.CABundle, connectors.Settings{}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := githubidp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// token logs user in through p and returns the GitHub access token.
func token(t *testing.T, p *githubidp.Provider, client *http.Client, user github.User) string {
	t.Helper()
	code := loginAs(t, client, p.AuthorizeURL(callback, "the-state"), user)
	tok, err := p.ExchangeAuthcode(t.Context(), code, callback)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestSupervisorLoginWithEnterpriseServer(t *testing.T) {
	s, err := github.Start(t.Context(), github.Options{Users: []github.User{alice, bob}, CallbackURL: callback})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	client := s.HTTPClient()

	tests := []struct {
		name       string
		cfg        githubidp.Config
		user       github.User
		wantName   string
		wantGroups []string
		wantErr    error
	}{
		{
			name: "defaults: login:id and slugs of allowed organizations, parents included",
			cfg:  githubidp.Config{AllowedOrganizations: []string{"seals"}},
			user: alice, wantName: "alice:1001", wantGroups: []string{"Seals/harbor", "Seals/all-seals"},
		},
		{
			name: "team names, login",
			cfg: githubidp.Config{AllowedOrganizations: []string{"seals", "OTTERS"},
				UsernameAttribute: idpv1alpha1.GitHubUsernameLogin, GroupNameAttribute: idpv1alpha1.GitHubGroupNameName},
			user: alice, wantName: "alice", wantGroups: []string{"Seals/Harbor Seals", "Seals/All Seals", "otters/Sea Otters"},
		},
		{
			name: "all GitHub users, id",
			cfg: githubidp.Config{Policy: idpv1alpha1.GitHubAllowedAuthOrganizationsPolicyAllGitHubUsers,
				UsernameAttribute: idpv1alpha1.GitHubUsernameID},
			user: bob, wantName: "1002", wantGroups: []string{"otters/river"},
		},
		{
			name: "member of no allowed organization",
			cfg:  githubidp.Config{AllowedOrganizations: []string{"seals"}},
			user: bob, wantErr: githubidp.ErrNotAllowed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, s, tt.cfg)
			if p.APIBaseURL() != s.APIURL {
				t.Errorf("API base URL %q, want %q", p.APIBaseURL(), s.APIURL)
			}
			id, err := p.GetUser(t.Context(), token(t, p, client, tt.user), "My GitHub")
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantSubject := fmt.Sprintf("%s?idpName=My+GitHub&login=%s&id=%d", s.APIURL, tt.user.Login, tt.user.ID)
			if id.Username != tt.wantName || !slices.Equal(id.Groups, tt.wantGroups) || id.Subject != wantSubject {
				t.Errorf("identity %+v, want username %q, groups %q, subject %q", id, tt.wantName, tt.wantGroups, wantSubject)
			}
		})
	}
}

func TestSupervisorReadsEveryPage(t *testing.T) {
	u := github.User{ID: 7, Login: "joiner", Password: "pw", Orgs: []string{"big"}}
	for i := range 230 {
		u.Orgs = append(u.Orgs, fmt.Sprintf("org-%03d", i))
		u.Teams = append(u.Teams, github.Team{Org: "big", Slug: fmt.Sprintf("t%03d", i), Name: fmt.Sprintf("T %d", i)})
	}
	u.Orgs = append(u.Orgs, "last-org") // allowed, and only on the third page
	s, err := github.Start(t.Context(), github.Options{Users: []github.User{u}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	p := newProvider(t, s, githubidp.Config{AllowedOrganizations: []string{"last-org", "big"}})
	id, err := p.GetUser(t.Context(), token(t, p, s.HTTPClient(), u), "gh")
	if err != nil {
		t.Fatal(err)
	}
	if len(id.Groups) != 230 || id.Groups[229] != "big/t229" {
		t.Errorf("%d groups, last %q; want 230 ending with big/t229", len(id.Groups), id.Groups[len(id.Groups)-1])
	}
}

func TestSupervisorRefresh(t *testing.T) {
	s, err := github.Start(t.Context(), github.Options{Users: []github.User{alice}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	p := newProvider(t, s, githubidp.Config{AllowedOrganizations: []string{"seals"}})
	tok := token(t, p, s.HTTPClient(), alice)
	first, err := p.GetUser(t.Context(), tok, "gh")
	if err != nil {
		t.Fatal(err)
	}

	if err := s.SetTeams("alice", github.Team{Org: "seals", Slug: "grey", Name: "Grey Seals"}); err != nil {
		t.Fatal(err)
	}
	again, err := p.Refresh(t.Context(), tok, "gh", first.Subject)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Groups, []string{"seals/grey"}) {
		t.Errorf("groups after a team change: %q", again.Groups)
	}

	if err := s.SetOrgs("alice", "otters"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Refresh(t.Context(), tok, "gh", first.Subject); !errors.Is(err, githubidp.ErrNotAllowed) {
		t.Errorf("refresh after leaving the allowed organization: %v, want ErrNotAllowed", err)
	}

	if err := s.SetOrgs("alice", "seals"); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename("alice", "alice-renamed"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Refresh(t.Context(), tok, "gh", first.Subject); !errors.Is(err, githubidp.ErrSubjectChanged) {
		t.Errorf("refresh after a rename: %v, want ErrSubjectChanged", err)
	}

	if err := s.RemoveUser("alice-renamed"); err != nil {
		t.Fatal(err)
	}
	var apiErr *githubidp.APIError
	if _, err := p.Refresh(t.Context(), tok, "gh", first.Subject); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Errorf("refresh of a removed user: %v, want a 401 APIError", err)
	}
}

func TestSupervisorExchangeErrors(t *testing.T) {
	s, err := github.Start(t.Context(), github.Options{Users: []github.User{alice}, LoggedIn: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	p := newProvider(t, s, githubidp.Config{AllowedOrganizations: []string{"seals"}})
	if _, err := p.ExchangeAuthcode(t.Context(), "not-a-code", callback); err == nil || !strings.Contains(err.Error(), "bad_verification_code") {
		t.Errorf("unknown code: %v", err)
	}
	if _, err := p.GetUser(t.Context(), "gho_unknown", "gh"); err == nil || !strings.Contains(err.Error(), "Bad credentials") {
		t.Errorf("unknown token: %v", err)
	}
}

// TestSupervisorWithGitHubDotCom points github.com and api.github.com at the double, whose
// certificate covers both names, to check the github.com URLs.
func TestSupervisorWithGitHubDotCom(t *testing.T) {
	s, err := github.Start(t.Context(), github.Options{Users: []github.User{alice}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	client, err := githubidp.NewHTTPClient(s.CABundle, connectors.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	transport := client.Transport.(utilnet.RoundTripperWrapper).WrappedRoundTripper().(*http.Transport)
	transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != "github.com:443" && addr != "api.github.com:443" {
			return nil, fmt.Errorf("test dials only GitHub, not %s", addr)
		}
		return (&net.Dialer{}).DialContext(ctx, network, s.Host)
	}

	p := newProvider(t, s, githubidp.Config{Host: "github.com", HTTPClient: client, AllowedOrganizations: []string{"seals"}})
	authorize := p.AuthorizeURL(callback, "the-state")
	if !strings.HasPrefix(authorize, "https://github.com/login/oauth/authorize?") || p.APIBaseURL() != "https://api.github.com" {
		t.Fatalf("authorize URL %q, API %q", authorize, p.APIBaseURL())
	}
	code := loginAs(t, client, authorize, alice)
	tok, err := p.ExchangeAuthcode(t.Context(), code, callback)
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.GetUser(t.Context(), tok, "gh")
	if err != nil {
		t.Fatal(err)
	}
	if id.Subject != "https://api.github.com?idpName=gh&login=alice&id=1001" {
		t.Errorf("subject %q", id.Subject)
	}
}

// TestSupervisorPrepare builds the Provider from a GitHubIdentityProvider spec as the
// Supervisor's controller would, checks the connection, and logs in with it.
func TestSupervisorPrepare(t *testing.T) {
	s, err := github.Start(t.Context(), github.Options{Users: []github.User{alice}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	spec := idpv1alpha1.GitHubIdentityProviderSpec{
		GitHubAPI: idpv1alpha1.GitHubAPIConfig{Host: &s.Host},
		AllowAuthentication: idpv1alpha1.GitHubAllowAuthenticationSpec{
			Organizations: idpv1alpha1.GitHubOrganizationsSpec{Allowed: []string{"seals"}},
		},
		Client: idpv1alpha1.GitHubClientSpec{SecretName: "github-client"},
	}
	secret := &corev1.Secret{Type: githubidp.ClientSecretType, Data: map[string][]byte{
		githubidp.ClientIDKey: []byte(github.DefaultClientID), githubidp.ClientSecretKey: []byte(github.DefaultClientSecret),
	}}
	p, address, conds := githubidp.Prepare("supervisor", spec, 1, secret, s.CABundle, nil, connectors.Settings{})
	if p == nil || address != s.Host || len(conds) != 5 {
		t.Fatalf("Prepare: provider %v, address %q, conditions %+v", p, address, conds)
	}
	if c := githubidp.ConnectionCondition(address, s.Host, 1, githubidp.CheckConnection(t.Context(), address, s.CABundle, connectors.Settings{})); c.Status != metav1.ConditionTrue {
		t.Fatalf("GitHubConnectionValid: %+v", c)
	}
	id, err := p.GetUser(t.Context(), token(t, p, s.HTTPClient(), alice), "gh")
	if err != nil {
		t.Fatal(err)
	}
	if id.Username != "alice:1001" || !slices.Equal(id.Groups, []string{"Seals/harbor", "Seals/all-seals"}) {
		t.Errorf("identity %+v", id)
	}
}
