// The Supervisor's LDAP authenticator against a real slapd: core may not import fixtures, so
// these tests live with the fixture.
package ldapclient_test

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"sealion.dev/core/certauthority"
	"sealion.dev/core/testing/testdeps"
	"sealion.dev/fixtures/ldap"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
)

func startLDAP(t *testing.T) (*ldap.LDAP, context.Context) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs slapd (fixtures/ldap); skipped under -short")
	}
	_, err := ldap.FindSlapd()
	testdeps.Require(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	l, err := ldap.Start(ctx, ldap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, ctx
}

// fixtureConfig finds users by uid, identifies them by entryUUID and names groups by cn.
func fixtureConfig(l *ldap.LDAP, host string) ldapclient.Config {
	return ldapclient.Config{
		Host:         host,
		CABundle:     l.CABundle,
		BindUsername: l.BindDN,
		BindPassword: l.BindPassword,
		UserSearch:   ldapclient.UserSearch{Base: ldap.UsersBaseDN, UsernameAttribute: "uid", UIDAttribute: "entryUUID"},
		GroupSearch:  ldapclient.GroupSearch{Base: ldap.GroupsBaseDN, GroupNameAttribute: "cn"},
	}
}

func newProvider(t *testing.T, c ldapclient.Config) *ldapclient.Provider {
	t.Helper()
	p, err := ldapclient.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func uid(t *testing.T, ctx context.Context, l *ldap.LDAP, username string) string {
	t.Helper()
	u, err := l.EntryUUID(ctx, username)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(u))
}

func TestAuthenticate(t *testing.T) {
	l, ctx := startLDAP(t)
	pinnyUID := uid(t, ctx, l, "pinny")

	tests := []struct {
		name         string
		host         string
		change       func(*ldapclient.Config)
		login        string
		want         ldapclient.Identity
		wantProtocol ldapclient.Protocol
	}{
		{
			name:         "LDAPS, uid and entryUUID, groups by member DN named by cn",
			host:         l.LDAPSAddress,
			login:        "pinny",
			want:         ldapclient.Identity{Username: "pinny", UID: pinnyUID, Groups: []string{"seals", "walruses"}, DN: ldap.UserDN("pinny")},
			wantProtocol: ldapclient.LDAPS,
		},
		{
			name:         "StartTLS after LDAPS fails",
			host:         l.StartTLSAddress,
			login:        "pinny",
			want:         ldapclient.Identity{Username: "pinny", UID: pinnyUID, Groups: []string{"seals", "walruses"}, DN: ldap.UserDN("pinny")},
			wantProtocol: ldapclient.StartTLS,
		},
		{
			name: "login by mail, groups by memberUid named by DN",
			host: l.LDAPSAddress,
			change: func(c *ldapclient.Config) {
				c.UserSearch.Filter = "(&(objectClass=inetOrgPerson)(mail={}))"
				c.UserSearch.UsernameAttribute = "mail"
				c.GroupSearch = ldapclient.GroupSearch{Base: ldap.GroupsBaseDN, Filter: "memberUid={}", UserAttributeForFilter: "uid"}
			},
			login:        "wally@example.com",
			want:         ldapclient.Identity{Username: "wally@example.com", UID: uid(t, ctx, l, "wally"), Groups: []string{ldap.GroupDN("walruses")}, DN: ldap.UserDN("wally")},
			wantProtocol: ldapclient.LDAPS,
		},
		{
			name: "DN as username and UID, no group search",
			host: l.LDAPSAddress,
			change: func(c *ldapclient.Config) {
				c.UserSearch = ldapclient.UserSearch{Base: ldap.BaseDN, Filter: "uid={}", UsernameAttribute: "dn", UIDAttribute: "dn"}
				c.GroupSearch = ldapclient.GroupSearch{}
			},
			login: "pinny",
			want: ldapclient.Identity{Username: ldap.UserDN("pinny"), UID: base64.RawURLEncoding.EncodeToString([]byte(ldap.UserDN("pinny"))),
				Groups: []string{}, DN: ldap.UserDN("pinny")},
			wantProtocol: ldapclient.LDAPS,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fixtureConfig(l, tt.host)
			if tt.change != nil {
				tt.change(&c)
			}
			p := newProvider(t, c)
			start := time.Now()
			got, err := p.Authenticate(ctx, tt.login, passwordOf(tt.want.DN))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("first Authenticate took %s", time.Since(start))
			if got.Username != tt.want.Username || got.UID != tt.want.UID || got.DN != tt.want.DN || !slices.Equal(got.Groups, tt.want.Groups) {
				t.Errorf("identity = %+v, want %+v", *got, tt.want)
			}
			if p.Protocol() != tt.wantProtocol {
				t.Errorf("protocol = %q, want %q", p.Protocol(), tt.wantProtocol)
			}
			start = time.Now()
			if _, err := p.Authenticate(ctx, tt.login, passwordOf(tt.want.DN)); err != nil {
				t.Fatal(err)
			}
			t.Logf("second Authenticate (protocol remembered) took %s", time.Since(start))
		})
	}
}

func passwordOf(dn string) string {
	for _, u := range ldap.DefaultUsers {
		if ldap.UserDN(u.Username) == dn {
			return u.Password
		}
	}
	return ""
}

func TestAuthenticateRejects(t *testing.T) {
	l, ctx := startLDAP(t)
	p := newProvider(t, fixtureConfig(l, l.LDAPSAddress))
	for _, tt := range []struct{ login, password string }{
		{"pinny", "wrong-password"},
		{"nobody", "fixture-password"},
		// Escaped: without escaping, "*" would match every user.
		{"*", "fixture-password"},
		{"pinny)(uid=*", "fixture-password"},
		{"pinny", ""},
	} {
		_, err := p.Authenticate(ctx, tt.login, tt.password)
		if !errors.Is(err, ldapclient.ErrInvalidCredentials) || err.Error() != "invalid credentials" {
			t.Errorf("Authenticate(%q, %q) = %v, want plain invalid credentials", tt.login, tt.password, err)
		}
	}

	c := fixtureConfig(l, l.LDAPSAddress)
	c.UserSearch.Filter = "(|(uid={})(objectClass=inetOrgPerson))"
	_, err := newProvider(t, c).Authenticate(ctx, "pinny", "fixture-password")
	if err == nil || !strings.Contains(err.Error(), "more than one entry matches") {
		t.Errorf("ambiguous user search = %v, want more than one entry", err)
	}

	c = fixtureConfig(l, l.LDAPSAddress)
	c.UserSearch.UsernameAttribute = "displayName"
	c.UserSearch.Filter = "uid={}"
	_, err = newProvider(t, c).Authenticate(ctx, "pinny", "fixture-password")
	if err == nil || !strings.Contains(err.Error(), `0 values of attribute "displayName"`) {
		t.Errorf("missing username attribute = %v, want a clear error", err)
	}
}

func TestProbe(t *testing.T) {
	l, ctx := startLDAP(t)
	for _, tt := range []struct {
		host string
		want ldapclient.Protocol
	}{{l.LDAPSAddress, ldapclient.LDAPS}, {l.StartTLSAddress, ldapclient.StartTLS}} {
		got, err := newProvider(t, fixtureConfig(l, tt.host)).Probe(ctx)
		if err != nil || got != tt.want {
			t.Errorf("Probe(%s) = %q, %v; want %q", tt.host, got, err, tt.want)
		}
	}

	c := fixtureConfig(l, l.LDAPSAddress)
	c.BindPassword = "wrong"
	_, err := newProvider(t, c).Probe(ctx)
	if err == nil || !strings.Contains(err.Error(), "binding as the service account") || errors.Is(err, ldapclient.ErrInvalidCredentials) {
		t.Errorf("Probe with a wrong bind password = %v, want a service account bind error", err)
	}
	_, err = newProvider(t, c).Authenticate(ctx, "pinny", "fixture-password")
	if err == nil || errors.Is(err, ldapclient.ErrInvalidCredentials) {
		t.Errorf("Authenticate with a wrong bind password = %v, want a configuration error, not invalid credentials", err)
	}

	other, err := certauthority.New("another CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c = fixtureConfig(l, l.LDAPSAddress)
	c.CABundle = other.Bundle()
	_, err = newProvider(t, c).Probe(ctx)
	if err == nil || !strings.Contains(err.Error(), "LDAPS: tls: failed to verify certificate") || !strings.Contains(err.Error(), "StartTLS:") {
		t.Errorf("Probe trusting another CA = %v, want both protocols to fail verification", err)
	}

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := newProvider(t, fixtureConfig(l, l.LDAPSAddress)).Probe(canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("Probe with a canceled context = %v, want context.Canceled", err)
	}
}

func TestRefresh(t *testing.T) {
	l, ctx := startLDAP(t)
	p := newProvider(t, fixtureConfig(l, l.LDAPSAddress))
	c := fixtureConfig(l, l.LDAPSAddress)
	c.GroupSearch.SkipGroupRefresh = true
	frozen := newProvider(t, c)

	login, err := p.Authenticate(ctx, "pinny", "fixture-password")
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Refresh(ctx, *login)
	if err != nil || !slices.Equal(got.Groups, login.Groups) {
		t.Fatalf("unchanged refresh = %+v, %v", got, err)
	}

	if err := l.SetGroups(ctx, "pinny", []string{"orcas"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err = p.Refresh(ctx, *login)
	if err != nil || !slices.Equal(got.Groups, []string{"orcas"}) {
		t.Errorf("refresh after a group change = %+v, %v; want groups [orcas]", got, err)
	}
	t.Logf("Refresh took %s", time.Since(start))
	got, err = frozen.Refresh(ctx, *login)
	if err != nil || !slices.Equal(got.Groups, login.Groups) {
		t.Errorf("refresh with skipGroupRefresh = %+v, %v; want groups %v", got, err, login.Groups)
	}

	if err := l.DeleteUser(ctx, "pinny"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Refresh(ctx, *login); !errors.Is(err, ldapclient.ErrUserNotFound) {
		t.Errorf("refresh of a deleted user = %v, want ErrUserNotFound", err)
	}
	if err := l.AddUser(ctx, ldap.User{Username: "pinny", Password: "fixture-password"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Refresh(ctx, *login); !errors.Is(err, ldapclient.ErrIdentityChanged) {
		t.Errorf("refresh of a user re-created under the same DN = %v, want ErrIdentityChanged", err)
	}
}
