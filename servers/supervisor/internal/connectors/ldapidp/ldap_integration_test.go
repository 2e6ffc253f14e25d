// The LDAP connector against a real slapd: core may not import fixtures, so these tests live
// with the connector.
package ldapidp_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/testing/testdeps"
	"sealion.dev/fixtures/ldap"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/ldapidp"
)

// TestOpenAndLogIn goes from a spec and its bind Secret to a Ready connector, and logs in and
// refreshes with it.
func TestOpenAndLogIn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs slapd (fixtures/ldap); skipped under -short")
	}
	_, err := ldap.FindSlapd()
	testdeps.Require(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := ldap.Start(ctx, ldap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()

	idp := &idpv1alpha1.LDAPIdentityProvider{Spec: idpv1alpha1.LDAPIdentityProviderSpec{
		Host: l.StartTLSAddress,
		Bind: idpv1alpha1.LDAPIdentityProviderBind{SecretName: "bind"},
		UserSearch: idpv1alpha1.LDAPIdentityProviderUserSearch{
			Base:       ldap.UsersBaseDN,
			Attributes: idpv1alpha1.LDAPIdentityProviderUserSearchAttributes{Username: "uid", UID: "entryUUID"},
		},
		GroupSearch: idpv1alpha1.LDAPIdentityProviderGroupSearch{
			Base:       ldap.GroupsBaseDN,
			Attributes: idpv1alpha1.LDAPIdentityProviderGroupSearchAttributes{GroupName: "cn"},
		},
	}}
	idp.Generation = 1
	secret := &corev1.Secret{Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{
		"username": []byte(l.BindDN), "password": []byte(l.BindPassword),
	}}
	conn, conds, err := ldapidp.Open(ctx, idp, connectors.Inputs{
		Secret:   func(string) (*corev1.Secret, error) { return secret, nil },
		CABundle: func(string, *idpv1alpha1.TLSSpec) ([]byte, error) { return l.CABundle, nil },
		Probes:   connectors.NewProbeCache(time.Now),
	})
	if err != nil || conn == nil || connectors.PhaseOf(conds) != idpv1alpha1.PhaseReady {
		t.Fatalf("Open = %v, %+v, %v; want a Ready connector", conn, conds, err)
	}

	password := conn.(connectors.PasswordConnector)
	login := connectors.Login{IDPName: "Corp LDAP"}
	var refusal *connectors.Error
	if _, err := password.Authenticate(ctx, login, "pinny", "wrong"); !errors.As(err, &refusal) {
		t.Errorf("a wrong password = %v, want a refusal", err)
	}
	id, err := password.Authenticate(ctx, login, "pinny", "fixture-password")
	if err != nil {
		t.Fatal(err)
	}
	wantSub := "ldaps://" + l.StartTLSAddress + "?base=" + url.QueryEscape(ldap.UsersBaseDN) + "&idpName=Corp+LDAP&sub="
	if id.Username != "pinny" || !slices.Equal(id.Groups, []string{"seals", "walruses"}) || !strings.HasPrefix(id.Subject, wantSub) ||
		id.Session.LDAP == nil || id.Session.LDAP.UserDN != ldap.UserDN("pinny") {
		t.Errorf("identity %+v (LDAP %+v), want pinny in seals and walruses with subject %s...", id, id.Session.LDAP, wantSub)
	}

	refresher := conn.(connectors.RefreshConnector)
	if err := l.SetGroups(ctx, "pinny", []string{"orcas"}); err != nil {
		t.Fatal(err)
	}
	now, err := refresher.Refresh(ctx, login, *id)
	if err != nil || !slices.Equal(now.Groups, []string{"orcas"}) || now.Session.LDAP != id.Session.LDAP {
		t.Errorf("refresh after a group change = %+v, %v; want groups [orcas] and the same session data", now, err)
	}
	if err := l.DeleteUser(ctx, "pinny"); err != nil {
		t.Fatal(err)
	}
	if _, err := refresher.Refresh(ctx, login, *id); !errors.As(err, &refusal) || refusal.Hint != "the ldap server no longer accepts the user" {
		t.Errorf("refresh of a deleted user = %v, want a refusal", err)
	}
}
