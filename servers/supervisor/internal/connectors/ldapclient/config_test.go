package ldapclient

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sealion.dev/servers/internal/tlsprofile"
)

func validConfig() Config {
	return Config{
		Host:         "ldap.example.test",
		BindUsername: "cn=svc,dc=example",
		BindPassword: "pw",
		UserSearch:   UserSearch{Base: "ou=people,dc=example", UsernameAttribute: "uid", UIDAttribute: "entryUUID"},
	}
}

func TestDefaults(t *testing.T) {
	p, err := New(validConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := validConfig()
	want.UserSearch.Filter = "(uid={})"
	want.GroupSearch = GroupSearch{Filter: "(member={})", UserAttributeForFilter: "dn", GroupNameAttribute: "dn"}
	if diff := cmp.Diff(want, p.Config(), cmp.AllowUnexported(tlsprofile.Profile{})); diff != "" {
		t.Errorf("config with defaults (-want +got):\n%s", diff)
	}

	c := validConfig()
	c.UserSearch.Filter = "(&(objectClass=person)(mail={}))"
	c.GroupSearch = GroupSearch{Base: "ou=groups,dc=example", Filter: "memberUid={}", UserAttributeForFilter: "uid", GroupNameAttribute: "cn"}
	p, err = New(c)
	if err != nil {
		t.Fatal(err)
	}
	c.GroupSearch.Filter = "(memberUid={})"
	if diff := cmp.Diff(c, p.Config(), cmp.AllowUnexported(tlsprofile.Profile{})); diff != "" {
		t.Errorf("explicit config (-want +got):\n%s", diff)
	}
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr []string
	}{
		{name: "no host", change: func(c *Config) { c.Host = "" }, wantErr: []string{"host is required"}},
		{name: "URL as host", change: func(c *Config) { c.Host = "ldaps://ldap.example.test" }, wantErr: []string{`host "ldaps://ldap.example.test" is not host[:port]`}},
		{name: "empty port", change: func(c *Config) { c.Host = "ldap.example.test:" }, wantErr: []string{"is not host[:port]"}},
		{name: "bad CA", change: func(c *Config) { c.CABundle = []byte("not PEM") }, wantErr: []string{"CA bundle holds no PEM certificate"}},
		{name: "no bind password", change: func(c *Config) { c.BindPassword = "" }, wantErr: []string{"bind username and password are required"}},
		{
			name:    "no user search",
			change:  func(c *Config) { c.UserSearch = UserSearch{} },
			wantErr: []string{"userSearch.base is required", "userSearch.attributes.username is required", "userSearch.attributes.uid is required"},
		},
		{name: "dn username needs a filter", change: func(c *Config) { c.UserSearch.UsernameAttribute = "dn" }, wantErr: []string{`userSearch.filter is required when userSearch.attributes.username is "dn"`}},
		{name: "filter without placeholder", change: func(c *Config) { c.UserSearch.Filter = "uid=pinny" }, wantErr: []string{`userSearch.filter "(uid=pinny)" must contain {}`}},
		{name: "broken user filter", change: func(c *Config) { c.UserSearch.Filter = "(&(uid={})" }, wantErr: []string{`userSearch.filter "(&(uid={})"`}},
		{
			name:    "broken group filter",
			change:  func(c *Config) { c.GroupSearch = GroupSearch{Base: "ou=groups", Filter: "(|(member={})"} },
			wantErr: []string{`groupSearch.filter "(|(member={})"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.change(&c)
			_, err := New(c)
			if err == nil {
				t.Fatal("New accepted the config")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestSubstituteEscapes(t *testing.T) {
	tests := []struct{ filter, value, want string }{
		{filter: "(uid={})", value: "pinny", want: "(uid=pinny)"},
		{filter: "(uid={})", value: "*", want: `(uid=\2a)`},
		{filter: "(uid={})", value: `a)(uid=*`, want: `(uid=a\29\28uid=\2a)`},
		{filter: "(|(uid={})(mail={}))", value: `back\slash`, want: `(|(uid=back\5cslash)(mail=back\5cslash))`},
		{filter: "(member={})", value: "cn=a\x00b,dc=x", want: `(member=cn=a\00b,dc=x)`},
	}
	for _, tt := range tests {
		if got := substitute(tt.filter, tt.value); got != tt.want {
			t.Errorf("substitute(%q, %q) = %q, want %q", tt.filter, tt.value, got, tt.want)
		}
	}
}

func TestHostPort(t *testing.T) {
	tests := []struct{ host, want, wantErr string }{
		{host: "ldap.example.test", want: "ldap.example.test:636"},
		{host: "ldap.example.test:1636", want: "ldap.example.test:1636"},
		{host: "10.0.0.1", want: "10.0.0.1:636"},
		{host: "::1", want: "[::1]:636"},
		{host: "[::1]", want: "[::1]:636"},
		{host: "[::1]:1636", want: "[::1]:1636"},
		{host: ":636", wantErr: "not host[:port]"},
		{host: "ldap.example.test:99999", wantErr: "not host[:port]"},
		{host: "a:b:c", wantErr: "not host[:port]"},
	}
	for _, tt := range tests {
		got, err := hostPort(tt.host, DefaultLDAPSPort)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("hostPort(%q) = %q, %v; want %q, error containing %q", tt.host, got, err, tt.want, tt.wantErr)
		}
	}
}

// An empty password must never reach the server: a simple bind without one is an
// unauthenticated bind, which succeeds.
func TestEmptyCredentialsNeverConnect(t *testing.T) {
	c := validConfig()
	c.Host = "ldap.invalid"
	p, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, creds := range [][2]string{{"pinny", ""}, {"", "password"}} {
		_, err := p.Authenticate(context.Background(), creds[0], creds[1])
		if !errors.Is(err, ErrInvalidCredentials) || err.Error() != "invalid credentials" {
			t.Errorf("Authenticate(%q, %q) = %v, want plain invalid credentials", creds[0], creds[1], err)
		}
	}
	if got := p.Protocol(); got != "" {
		t.Errorf("a connection was made (protocol %q)", got)
	}
}

func TestRootDSEChecksOnlyTheConnectionSettings(t *testing.T) {
	_, err := RootDSE(context.Background(), Config{Host: "ldaps://x", BindUsername: "cn=svc"})
	for _, want := range []string{"is not host[:port]", "bind username and password are required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("RootDSE error = %v, want it to contain %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "userSearch") {
		t.Errorf("RootDSE checked the searches, which it does not use: %v", err)
	}
}
