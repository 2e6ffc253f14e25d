package oidcprovider

import (
	"context"
	"crypto/rand"
	"errors"
	"net/url"
	"slices"
	"sync"

	"golang.org/x/oauth2"

	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/upstreamgithub"
	"sealion.dev/servers/supervisor/internal/upstreamldap"
)

// fakeUpstreams is a registry of upstreams in the test namespace.
type fakeUpstreams struct {
	mu   sync.Mutex
	byID map[string]any // "<type>/<name>"
}

var _ Upstreams = (*fakeUpstreams)(nil)

func (f *fakeUpstreams) add(typ issuer.IdentityProviderType, name string, upstream any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byID == nil {
		f.byID = map[string]any{}
	}
	f.byID[string(typ)+"/"+name] = upstream
}

func (f *fakeUpstreams) get(typ issuer.IdentityProviderType, ns, name string) (any, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.byID[string(typ)+"/"+name]
	return u, ok && ns == namespace
}

func (f *fakeUpstreams) OIDC(ns, name string) (*Upstream, bool) {
	u, ok := f.get(issuer.TypeOIDC, ns, name)
	up, _ := u.(*Upstream)
	return up, ok && up != nil
}

func (f *fakeUpstreams) Password(typ issuer.IdentityProviderType, ns, name string) (PasswordAuthenticator, bool) {
	u, ok := f.get(typ, ns, name)
	up, _ := u.(PasswordAuthenticator)
	return up, ok && up != nil
}

func (f *fakeUpstreams) GitHub(ns, name string) (GitHubAuthenticator, bool) {
	u, ok := f.get(issuer.TypeGitHub, ns, name)
	up, _ := u.(GitHubAuthenticator)
	return up, ok && up != nil
}

// fakeDirectory is an LDAP server's users: a user may log in with their password until deleted
// or disabled; refreshes report their current groups.
type fakeDirectory struct {
	mu        sync.Mutex
	users     map[string]*directoryUser // by username
	down      bool                      // the server is unreachable
	refreshes int
}

type directoryUser struct {
	password string
	groups   []string
	disabled bool
}

var _ PasswordAuthenticator = (*fakeDirectory)(nil)

func newFakeDirectory() *fakeDirectory {
	return &fakeDirectory{users: map[string]*directoryUser{
		"pinny": {password: "pinny-password", groups: []string{"seals", "walruses"}},
	}}
}

func dn(username string) string { return "uid=" + username + ",ou=people,dc=example,dc=com" }

func (d *fakeDirectory) Config() upstreamldap.Config {
	return upstreamldap.Config{Host: "ldap.example.com:636", UserSearch: upstreamldap.UserSearch{Base: "ou=people,dc=example,dc=com"}}
}

func (d *fakeDirectory) Authenticate(_ context.Context, username, password string) (*upstreamldap.Identity, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		return nil, errors.New("dial tcp ldap.example.com:636: connection refused (uid=secret-service-account)")
	}
	u, ok := d.users[username]
	if !ok || u.disabled || u.password != password {
		return nil, upstreamldap.ErrInvalidCredentials
	}
	return &upstreamldap.Identity{Username: username, UID: "uid-" + username, Groups: slices.Clone(u.groups), DN: dn(username),
		RefreshAttributes: map[string]string{"pwdLastSet": "1"}}, nil
}

func (d *fakeDirectory) Refresh(_ context.Context, prev upstreamldap.Identity) (*upstreamldap.Identity, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refreshes++
	u, ok := d.users[prev.Username]
	switch {
	case !ok || prev.DN != dn(prev.Username) || prev.UID != "uid-"+prev.Username:
		return nil, upstreamldap.ErrUserNotFound
	case u.disabled || prev.RefreshAttributes["pwdLastSet"] != "1":
		return nil, errors.New("user account is disabled")
	}
	return &upstreamldap.Identity{Username: prev.Username, UID: prev.UID, Groups: slices.Clone(u.groups), DN: prev.DN}, nil
}

func (d *fakeDirectory) update(f func(users map[string]*directoryUser)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(d.users)
}

// fakeGitHub logs the browser in at once: its authorize URL is the Supervisor's callback with a
// code, which it trades for an access token of the one user.
type fakeGitHub struct {
	mu        sync.Mutex
	codes     map[string]string // code -> redirect URI
	tokens    map[string]bool
	groups    []string
	refuse    bool
	refreshes int
}

var _ GitHubAuthenticator = (*fakeGitHub)(nil)

func newFakeGitHub() *fakeGitHub {
	return &fakeGitHub{codes: map[string]string{}, tokens: map[string]bool{}, groups: []string{"seals-org/divers"}}
}

func (g *fakeGitHub) AuthorizeURL(redirectURI, state string, _ ...oauth2.AuthCodeOption) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	code := rand.Text()
	g.codes[code] = redirectURI
	return redirectURI + "?" + url.Values{"code": {code}, "state": {state}}.Encode()
}

func (g *fakeGitHub) ExchangeAuthcode(_ context.Context, code, redirectURI string, _ ...oauth2.AuthCodeOption) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if want, ok := g.codes[code]; !ok || want != redirectURI {
		return "", errors.New("bad_verification_code")
	}
	delete(g.codes, code)
	token := rand.Text()
	g.tokens[token] = true
	return token, nil
}

func (g *fakeGitHub) GetUser(_ context.Context, accessToken, idpDisplayName string) (*upstreamgithub.Identity, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.tokens[accessToken] {
		return nil, errors.New("github: 401 Bad credentials")
	}
	if g.refuse {
		return nil, upstreamgithub.ErrNotAllowed
	}
	return &upstreamgithub.Identity{Login: "pinny", ID: "42", Username: "pinny:42", Groups: slices.Clone(g.groups),
		Subject: "https://api.github.com?idpName=" + url.QueryEscape(idpDisplayName) + "&login=pinny&id=42"}, nil
}

func (g *fakeGitHub) Refresh(ctx context.Context, accessToken, idpDisplayName, subject string) (*upstreamgithub.Identity, error) {
	g.mu.Lock()
	g.refreshes++
	g.mu.Unlock()
	id, err := g.GetUser(ctx, accessToken, idpDisplayName)
	if err != nil {
		return nil, err
	}
	if id.Subject != subject {
		return nil, upstreamgithub.ErrSubjectChanged
	}
	return id, nil
}
