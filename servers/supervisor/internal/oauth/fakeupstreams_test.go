package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"net/url"
	"slices"
	"sync"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/ldapidp"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// fakeUpstreams is the registry of connectors, all in the test namespace.
type fakeUpstreams struct{ connectors.Registry }

func (f *fakeUpstreams) add(typ issuer.IdentityProviderType, name string, c connectors.Connector) {
	f.Set(typ, namespace, name, c)
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

var (
	_ connectors.PasswordConnector = (*fakeDirectory)(nil)
	_ connectors.RefreshConnector  = (*fakeDirectory)(nil)
)

func newFakeDirectory() *fakeDirectory {
	return &fakeDirectory{users: map[string]*directoryUser{
		"pinny": {password: "pinny-password", groups: []string{"seals", "walruses"}},
	}}
}

func dn(username string) string { return "uid=" + username + ",ou=people,dc=example,dc=com" }

// errDirectoryDown is ldapidp's answer while the server refuses connections.
var errDirectoryDown = connectors.Unavailable(errors.New("dial tcp ldap.example.com:636: connection refused (uid=secret-service-account)"))

// Authenticate answers as ldapidp's connector does.
func (d *fakeDirectory) Authenticate(_ context.Context, login connectors.Login, username, password string) (*connectors.Identity, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		return nil, errDirectoryDown
	}
	u, ok := d.users[username]
	if !ok || u.disabled || u.password != password {
		return nil, connectors.Refused("Username/password not accepted by LDAP provider.", nil)
	}
	return &connectors.Identity{
		Subject:  ldapidp.Subject("ldap.example.com:636", "ou=people,dc=example,dc=com", login.IDPName, "uid-"+username),
		Username: username, Groups: slices.Clone(u.groups),
		Session: connectors.Session{LDAP: &connectors.LDAPSession{UserDN: dn(username), UID: "uid-" + username,
			ExtraRefreshAttributes: map[string]string{"pwdLastSet": "1"}}},
	}, nil
}

func (d *fakeDirectory) Refresh(_ context.Context, _ connectors.Login, prev connectors.Identity) (*connectors.Identity, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refreshes++
	if d.down {
		return nil, errDirectoryDown
	}
	u, ok := d.users[prev.Username]
	s := prev.Session.LDAP
	switch {
	case s == nil:
		return nil, connectors.Refused("the session holds no LDAP user", nil)
	case !ok || s.UserDN != dn(prev.Username) || s.UID != "uid-"+prev.Username:
		return nil, connectors.Refused("the ldap server no longer accepts the user", errors.New("user no longer exists"))
	case u.disabled || s.ExtraRefreshAttributes["pwdLastSet"] != "1":
		return nil, connectors.Refused("the ldap server no longer accepts the user", errors.New("user account is disabled"))
	}
	now := prev
	now.Groups = slices.Clone(u.groups)
	return &now, nil
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

var (
	_ connectors.BrowserConnector = (*fakeGitHub)(nil)
	_ connectors.RefreshConnector = (*fakeGitHub)(nil)
)

func newFakeGitHub() *fakeGitHub {
	return &fakeGitHub{codes: map[string]string{}, tokens: map[string]bool{}, groups: []string{"seals-org/divers"}}
}

func (g *fakeGitHub) AuthorizeURL(_ context.Context, login connectors.Login, state string, _ connectors.BrowserSecrets) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	code := rand.Text()
	g.codes[code] = login.CallbackURL
	return login.CallbackURL + "?" + url.Values{"code": {code}, "state": {state}}.Encode(), nil
}

// Exchange answers as githubidp's connector does.
func (g *fakeGitHub) Exchange(_ context.Context, login connectors.Login, code string, _ connectors.BrowserSecrets) (*connectors.Identity, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if want, ok := g.codes[code]; !ok || want != login.CallbackURL {
		return nil, connectors.Refused("GitHub refused the authorization code", errors.New("bad_verification_code"))
	}
	delete(g.codes, code)
	if g.refuse {
		return nil, connectors.Refused("The user is not a member of an organization allowed to log in.", nil)
	}
	token := rand.Text()
	g.tokens[token] = true
	return &connectors.Identity{Subject: g.subject(login), Username: "pinny:42", Groups: slices.Clone(g.groups),
		Session: connectors.Session{GitHub: &connectors.GitHubSession{UpstreamAccessToken: token}}}, nil
}

func (g *fakeGitHub) subject(login connectors.Login) string {
	return "https://api.github.com?idpName=" + url.QueryEscape(login.IDPName) + "&login=pinny&id=42"
}

func (g *fakeGitHub) Refresh(_ context.Context, login connectors.Login, prev connectors.Identity) (*connectors.Identity, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refreshes++
	switch {
	case prev.Session.GitHub == nil || !g.tokens[prev.Session.GitHub.UpstreamAccessToken]:
		return nil, connectors.Refused("GitHub no longer accepts the user", errors.New("401 Bad credentials"))
	case g.refuse:
		return nil, connectors.Refused("GitHub no longer accepts the user", errors.New("not allowed"))
	case prev.Subject != g.subject(login):
		return nil, connectors.Refused("GitHub no longer accepts the user", errors.New("subject changed"))
	}
	now := prev
	now.Groups = slices.Clone(g.groups)
	return &now, nil
}
