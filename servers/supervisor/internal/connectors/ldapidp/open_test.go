package ldapidp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
)

func ldapIDP(name, host, bindSecret string) *idpv1alpha1.LDAPIdentityProvider {
	return &idpv1alpha1.LDAPIdentityProvider{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: idpv1alpha1.LDAPIdentityProviderSpec{
			Host: host, Bind: idpv1alpha1.LDAPIdentityProviderBind{SecretName: bindSecret},
			UserSearch: idpv1alpha1.LDAPIdentityProviderUserSearch{
				Base:       "ou=people,dc=example",
				Attributes: idpv1alpha1.LDAPIdentityProviderUserSearchAttributes{Username: "uid", UID: "entryUUID"},
			},
		},
	}
}

// TestOpen opens objects with a probe that reaches hosts named good...: it probes only what it
// has not probed successfully for the same inputs, and connects only Ready objects.
func TestOpen(t *testing.T) {
	bind := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bind", ResourceVersion: "1"}, Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte("cn=svc,dc=example"), "password": []byte("pw")}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	caches := map[string]*connectors.ProbeCache{}
	probes := 0
	open := func(idp *idpv1alpha1.LDAPIdentityProvider) (connectors.Connector, []metav1.Condition) {
		t.Helper()
		if caches[idp.Name] == nil {
			caches[idp.Name] = connectors.NewProbeCache(func() time.Time { return now })
		}
		in := connectors.Inputs{
			Secret: func(name string) (*corev1.Secret, error) {
				if name == bind.Name {
					return bind, nil
				}
				return nil, nil
			},
			CABundle: func(string, *idpv1alpha1.TLSSpec) ([]byte, error) { return nil, nil },
			Probes:   caches[idp.Name],
		}
		c, conds, err := open(context.Background(), idp, in, func(p *ldapclient.Provider, _ context.Context) (ldapclient.Protocol, error) {
			probes++
			if strings.HasPrefix(p.Config().Host, "good") {
				return ldapclient.LDAPS, nil
			}
			return "", errors.New("connection refused")
		})
		if err != nil {
			t.Fatal(err)
		}
		return c, conds
	}
	ready, down, noBind := ldapIDP("ready", "good.ldap.example", "bind"), ldapIDP("down", "down.ldap.example", "bind"), ldapIDP("no-bind", "good.ldap.example", "missing")
	openAll := func() map[string]connectors.Connector {
		got := map[string]connectors.Connector{}
		for _, idp := range []*idpv1alpha1.LDAPIdentityProvider{ready, down, noBind} {
			c, conds := open(idp)
			if (c != nil) != (connectors.PhaseOf(conds) == idpv1alpha1.PhaseReady) {
				t.Errorf("%s: connector %v with conditions %+v", idp.Name, c, conds)
			}
			got[idp.Name] = c
		}
		return got
	}

	got := openAll()
	if got["ready"] == nil || got["down"] != nil || got["no-bind"] != nil {
		t.Errorf("connectors %v, want one for ready only", got)
	}
	if probes != 2 {
		t.Errorf("%d probes, want 2 (ready and down; no-bind has nothing to probe)", probes)
	}

	openAll()
	if probes != 3 {
		t.Errorf("after a resync: %d probes, want 3 (only down again)", probes)
	}
	bind = bind.DeepCopy()
	bind.ResourceVersion = "2"
	openAll()
	if probes != 5 {
		t.Errorf("after the bind Secret changed: %d probes, want 5 (ready and down)", probes)
	}
	now = now.Add(connectors.ProbeTTL)
	openAll()
	if probes != 7 {
		t.Errorf("after connectors.ProbeTTL: %d probes, want 7 (ready and down)", probes)
	}
}

// TestOpenWhileUnreachable: a server that refuses connections after a successful probe of the same
// inputs keeps its connector while LDAPConnectionValid is False; any other failure, or other
// inputs, drop it.
func TestOpenWhileUnreachable(t *testing.T) {
	bind := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bind", ResourceVersion: "1"}, Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte("cn=svc,dc=example"), "password": []byte("pw")}}
	probes := connectors.NewProbeCache(time.Now)
	var fail error
	open := func() (connectors.Connector, metav1.Condition) {
		t.Helper()
		in := connectors.Inputs{
			Secret:   func(string) (*corev1.Secret, error) { return bind, nil },
			CABundle: func(string, *idpv1alpha1.TLSSpec) ([]byte, error) { return nil, nil },
			Probes:   probes,
		}
		c, conds, err := open(context.Background(), ldapIDP("dir", "ldap.example", "bind"), in, func(*ldapclient.Provider, context.Context) (ldapclient.Protocol, error) {
			return ldapclient.LDAPS, fail
		})
		if err != nil {
			t.Fatal(err)
		}
		return c, conds[len(conds)-1]
	}
	refused := fmt.Errorf("connecting to LDAP server %q: %w", "ldap.example", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})

	fail = refused
	if c, _ := open(); c != nil {
		t.Error("unreachable before any success: got a connector")
	}
	fail = nil
	good, _ := open()
	if good == nil {
		t.Fatal("no connector after a successful probe")
	}
	probes.Expire()
	fail = refused
	c, cond := open()
	if c == nil || c.(*Connector).provider != good.(*Connector).provider || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "ldap.example") {
		t.Errorf("unreachable after a success: connector %v, %+v; want the last good one and a False condition naming the host", c, cond)
	}
	fail = errors.New(`binding as the service account "cn=svc,dc=example": LDAP Result Code 49 "Invalid Credentials"`)
	if c, _ := open(); c != nil {
		t.Error("a server that refused the bind kept its connector")
	}
	fail = refused
	bind = bind.DeepCopy()
	bind.ResourceVersion = "2"
	if c, _ := open(); c != nil {
		t.Error("an unreachable server kept the connector of a former bind Secret")
	}
}

func TestConnector(t *testing.T) {
	p, err := ldapclient.New(ldapclient.Config{
		Host: "ldap.invalid", BindUsername: "cn=svc", BindPassword: "pw",
		UserSearch: ldapclient.UserSearch{Base: "ou=people,dc=example", UsernameAttribute: "uid", UIDAttribute: "entryUUID"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := NewConnector(p, "activedirectory")
	ctx := context.Background()
	var refusal *connectors.Error
	// An empty password never reaches the server, and is the user's doing.
	if _, err := c.Authenticate(ctx, connectors.Login{IDPName: "Corp"}, "pinny", ""); !errors.As(err, &refusal) ||
		refusal.Hint != "Username/password not accepted by LDAP provider." {
		t.Errorf("Authenticate without a password = %v, want the refusal of LDAP", err)
	}
	if _, err := c.Refresh(ctx, connectors.Login{}, connectors.Identity{Username: "pinny"}); !errors.As(err, &refusal) ||
		refusal.Hint != "the session holds no LDAP user" {
		t.Errorf("Refresh without LDAP session data = %v, want a refusal", err)
	}

	// A server that refuses connections refuses no one: the session stays valid for later.
	down := NewConnector(closedPortProvider(t), "activedirectory")
	session := connectors.Identity{Username: "pinny", Session: connectors.Session{LDAP: &connectors.LDAPSession{UserDN: "uid=pinny"}}}
	if _, err = down.Refresh(ctx, connectors.Login{}, session); !errors.As(err, &refusal) || !refusal.Unavailable || refusal.Err == nil {
		t.Errorf("Refresh at an unreachable server = %v, want Unavailable with the cause", err)
	}
	if _, err = down.Authenticate(ctx, connectors.Login{}, "pinny", "pw"); !errors.As(err, &refusal) || !refusal.Unavailable {
		t.Errorf("Authenticate at an unreachable server = %v, want Unavailable", err)
	}
	if got, want := Subject("ldap.example.com:636", "ou=people,dc=example", "Corp LDAP", "uid-1"),
		"ldaps://ldap.example.com:636?base=ou%3Dpeople%2Cdc%3Dexample&idpName=Corp+LDAP&sub=uid-1"; got != want {
		t.Errorf("Subject = %q, want %q", got, want)
	}
}

// closedPortProvider is a Provider of a loopback port where nothing listens.
func closedPortProvider(t *testing.T) *ldapclient.Provider {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	_ = l.Close()
	p, err := ldapclient.New(ldapclient.Config{
		Host: host, BindUsername: "cn=svc", BindPassword: "pw",
		UserSearch: ldapclient.UserSearch{Base: "ou=people,dc=example", UsernameAttribute: "uid", UIDAttribute: "entryUUID"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
