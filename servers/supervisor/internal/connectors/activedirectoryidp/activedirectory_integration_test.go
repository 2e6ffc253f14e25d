// The Supervisor's Active Directory authenticator against a real Samba domain controller: core
// may not import fixtures, so these tests live with the fixture.
package activedirectoryidp_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/testing/testdeps"
	"sealion.dev/fixtures/activedirectory"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/activedirectoryidp"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
)

func start(t *testing.T, opts activedirectory.Options) (*activedirectory.AD, context.Context) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a Samba domain controller (fixtures/activedirectory); skipped under -short")
	}
	testdeps.Require(t, activedirectory.Available())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	a, err := activedirectory.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a, ctx
}

// provider builds a Provider from a spec with only host and bind account, as most
// ActiveDirectoryIdentityProviders are written, resolving the bases from the RootDSE.
func provider(t *testing.T, ctx context.Context, a *activedirectory.AD, host, bindUsername string) *ldapclient.Provider {
	t.Helper()
	return providerForSpec(t, ctx, a, idpv1alpha1.ActiveDirectoryIdentityProviderSpec{Host: host}, bindUsername)
}

func providerForSpec(t *testing.T, ctx context.Context, a *activedirectory.AD, spec idpv1alpha1.ActiveDirectoryIdentityProviderSpec, bindUsername string) *ldapclient.Provider {
	t.Helper()
	cfg := activedirectoryidp.ConfigFromSpec(spec, a.CABundle, bindUsername, a.BindPassword)
	cfg, err := activedirectoryidp.ResolveSearchBases(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.UserSearch.Base != activedirectory.BaseDN || cfg.GroupSearch.Base != activedirectory.BaseDN {
		t.Fatalf("search bases = %q, %q; want the defaultNamingContext %q", cfg.UserSearch.Base, cfg.GroupSearch.Base, activedirectory.BaseDN)
	}
	p, err := activedirectoryidp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// guid renders a raw objectGUID independently of activedirectoryidp: fields 1-3 little-endian.
func guid(t *testing.T, ctx context.Context, a *activedirectory.AD, user string) string {
	t.Helper()
	b, err := a.ObjectGUID(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%x-%x", b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6], b[8:10], b[10:])
}

func TestAuthenticate(t *testing.T) {
	a, ctx := start(t, activedirectory.Options{})
	pinny := ldapclient.Identity{
		Username: "pinny@sealion.test",
		UID:      guid(t, ctx, a, "pinny"),
		Groups:   []string{"marine-mammals@sealion.test", "seals@sealion.test"},
		DN:       activedirectory.UserDN("pinny"),
	}
	ignoreRefreshAttributes := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".RefreshAttributes" }, cmp.Ignore())

	tests := []struct {
		name, host, bindUsername, login string
		wantProtocol                    ldapclient.Protocol
	}{
		{name: "LDAPS, by sAMAccountName, bind by DN", host: a.LDAPSAddress, bindUsername: a.BindDN, login: "pinny", wantProtocol: ldapclient.LDAPS},
		{name: "StartTLS, by userPrincipalName, bind by UPN", host: a.StartTLSAddress, bindUsername: a.BindUPN, login: "pinny@sealion.test", wantProtocol: ldapclient.StartTLS},
		{name: "by mail", host: a.LDAPSAddress, bindUsername: a.BindDN, login: "pinny@example.com", wantProtocol: ldapclient.LDAPS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := provider(t, ctx, a, tt.host, tt.bindUsername)
			if proto, err := p.Probe(ctx); err != nil || proto != tt.wantProtocol {
				t.Fatalf("Probe = %q, %v; want %q", proto, err, tt.wantProtocol)
			}
			began := time.Now()
			got, err := p.Authenticate(ctx, tt.login, "fixture-password")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("Authenticate took %v", time.Since(began))
			if diff := cmp.Diff(&pinny, got, ignoreRefreshAttributes); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
			if got.RefreshAttributes["pwdLastSet"] == "" {
				t.Errorf("pwdLastSet was not kept for refresh: %v", got.RefreshAttributes)
			}
		})
	}

	p := provider(t, ctx, a, a.LDAPSAddress, a.BindDN)
	for _, tt := range []struct{ login, password string }{
		{"pinny", "wrong"}, {"nobody", "fixture-password"}, {"pinny", ""}, {"marine-mammals", "fixture-password"},
	} {
		if _, err := p.Authenticate(ctx, tt.login, tt.password); !errors.Is(err, ldapclient.ErrInvalidCredentials) {
			t.Errorf("Authenticate(%q, %q) = %v, want ErrInvalidCredentials", tt.login, tt.password, err)
		}
	}
}

// TestRefresh logs each user in, changes the account the way an administrator would, and
// checks what the next refresh says.
func TestRefresh(t *testing.T) {
	users := []activedirectory.User{
		{SAMAccountName: "same", Password: "pw-same", Groups: []string{"seals"}},
		{SAMAccountName: "regrouped", Password: "pw-regrouped", Groups: []string{"seals"}},
		{SAMAccountName: "disabled", Password: "pw-disabled"},
		{SAMAccountName: "locked", Password: "pw-locked"},
		{SAMAccountName: "reset", Password: "pw-reset"},
		{SAMAccountName: "deleted", Password: "pw-deleted"},
		{SAMAccountName: "renamed", Password: "pw-renamed"},
		{SAMAccountName: "frozen", Password: "pw-frozen", Groups: []string{"seals"}},
	}
	a, ctx := start(t, activedirectory.Options{Users: users})
	p := provider(t, ctx, a, a.LDAPSAddress, a.BindDN)
	login := map[string]*ldapclient.Identity{}
	for _, u := range users {
		id, err := p.Authenticate(ctx, u.SAMAccountName, u.Password)
		if err != nil {
			t.Fatalf("logging in %s: %v", u.SAMAccountName, err)
		}
		login[u.SAMAccountName] = id
	}

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.SetGroups(ctx, "regrouped", []string{"walruses", "orcas"}))
	must(a.SetGroups(ctx, "frozen", []string{"walruses"}))
	must(a.Disable(ctx, "disabled"))
	must(a.Lock(ctx, "locked"))
	must(a.SetPassword(ctx, "reset", "pw-reset-2"))
	must(a.DeleteUser(ctx, "deleted"))
	must(a.DeleteUser(ctx, "renamed"))
	must(a.AddUser(ctx, activedirectory.User{SAMAccountName: "renamed", Password: "pw-renamed"}))

	tests := []struct {
		user       string
		skipGroups bool
		wantGroups []string
		wantErr    error
	}{
		{user: "same", wantGroups: []string{"marine-mammals@sealion.test", "seals@sealion.test"}},
		{user: "regrouped", wantGroups: []string{"marine-mammals@sealion.test", "orcas@sealion.test", "walruses@sealion.test"}},
		{user: "frozen", skipGroups: true, wantGroups: []string{"marine-mammals@sealion.test", "seals@sealion.test"}},
		{user: "disabled", wantErr: activedirectoryidp.ErrAccountDisabled},
		{user: "locked", wantErr: activedirectoryidp.ErrAccountLocked},
		{user: "reset", wantErr: activedirectoryidp.ErrPasswordChanged},
		{user: "deleted", wantErr: ldapclient.ErrUserNotFound},
		// Same name and DN, another account: a new objectGUID.
		{user: "renamed", wantErr: ldapclient.ErrIdentityChanged},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			rp := p
			if tt.skipGroups {
				spec := idpv1alpha1.ActiveDirectoryIdentityProviderSpec{Host: a.LDAPSAddress}
				spec.GroupSearch.SkipGroupRefresh = true
				rp = providerForSpec(t, ctx, a, spec, a.BindDN)
			}
			got, err := rp.Refresh(ctx, *login[tt.user])
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Refresh = %v, %v; want %v", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Groups, tt.wantGroups) {
				t.Errorf("groups = %v, want %v", got.Groups, tt.wantGroups)
			}
			if got.UID != login[tt.user].UID || got.Username != login[tt.user].Username {
				t.Errorf("identity changed: %+v, was %+v", got, login[tt.user])
			}
		})
	}

	// Logging in again after the reset starts a new session that refreshes fine.
	id, err := p.Authenticate(ctx, "reset", "pw-reset-2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Refresh(ctx, *id); err != nil {
		t.Errorf("refresh after logging in with the new password: %v", err)
	}
}

// TestConnect computes the status conditions of ActiveDirectoryIdentityProviders against the
// domain controller.
func TestConnect(t *testing.T) {
	a, ctx := start(t, activedirectory.Options{})
	secret := func(password string) *corev1.Secret {
		return &corev1.Secret{Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte(a.BindDN), "password": []byte(password)}}
	}
	type cond struct {
		Type   string
		Status metav1.ConditionStatus
		Reason string
	}
	tests := []struct {
		name      string
		spec      idpv1alpha1.ActiveDirectoryIdentityProviderSpec
		password  string
		want      []cond
		wantPhase idpv1alpha1.Phase
	}{
		{
			name:     "bases from the RootDSE",
			spec:     idpv1alpha1.ActiveDirectoryIdentityProviderSpec{Host: a.LDAPSAddress},
			password: a.BindPassword,
			want: []cond{{"BindSecretValid", "True", "Success"}, {"TLSConfigurationValid", "True", "Success"},
				{"SearchBaseFound", "True", "Success"}, {"LDAPConnectionValid", "True", "Success"}},
			wantPhase: idpv1alpha1.PhaseReady,
		},
		{
			name: "bases from the spec, over StartTLS",
			spec: idpv1alpha1.ActiveDirectoryIdentityProviderSpec{Host: a.StartTLSAddress,
				UserSearch:  idpv1alpha1.ActiveDirectoryIdentityProviderUserSearch{Base: activedirectory.UsersDN},
				GroupSearch: idpv1alpha1.ActiveDirectoryIdentityProviderGroupSearch{Base: activedirectory.UsersDN}},
			password: a.BindPassword,
			want: []cond{{"BindSecretValid", "True", "Success"}, {"TLSConfigurationValid", "True", "Success"},
				{"SearchBaseFound", "True", "UsingConfigurationFromSpec"}, {"LDAPConnectionValid", "True", "Success"}},
			wantPhase: idpv1alpha1.PhaseReady,
		},
		{
			name:     "wrong bind password, bases from the RootDSE",
			spec:     idpv1alpha1.ActiveDirectoryIdentityProviderSpec{Host: a.LDAPSAddress},
			password: "wrong",
			want: []cond{{"BindSecretValid", "True", "Success"}, {"TLSConfigurationValid", "True", "Success"},
				{"SearchBaseFound", "False", "ErrorFetchingSearchBase"}, {"LDAPConnectionValid", "Unknown", "UnableToValidate"}},
			wantPhase: idpv1alpha1.PhaseError,
		},
		{
			name: "wrong bind password, bases from the spec",
			spec: idpv1alpha1.ActiveDirectoryIdentityProviderSpec{Host: a.LDAPSAddress,
				UserSearch:  idpv1alpha1.ActiveDirectoryIdentityProviderUserSearch{Base: activedirectory.BaseDN},
				GroupSearch: idpv1alpha1.ActiveDirectoryIdentityProviderGroupSearch{Base: activedirectory.BaseDN}},
			password: "wrong",
			want: []cond{{"BindSecretValid", "True", "Success"}, {"TLSConfigurationValid", "True", "Success"},
				{"SearchBaseFound", "True", "UsingConfigurationFromSpec"}, {"LDAPConnectionValid", "False", "LDAPConnectionError"}},
			wantPhase: idpv1alpha1.PhaseError,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, conds := activedirectoryidp.Prepare(tt.spec, 2, secret(tt.password), a.CABundle, nil, connectors.Settings{})
			if cfg == nil {
				t.Fatalf("Prepare: %+v", conds)
			}
			p, more, _ := activedirectoryidp.Connect(ctx, *cfg, secret(tt.password), 2)
			conds = append(conds, more...)
			var got []cond
			for _, c := range conds {
				got = append(got, cond{c.Type, c.Status, c.Reason})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s\n%+v", diff, conds)
			}
			if phase := connectors.PhaseOf(conds); phase != tt.wantPhase {
				t.Errorf("phase = %q, want %q", phase, tt.wantPhase)
			}
			if tt.wantPhase != idpv1alpha1.PhaseReady {
				return
			}
			if _, err := p.Authenticate(ctx, "pinny", "fixture-password"); err != nil {
				t.Errorf("authenticating with the Provider from Connect: %v", err)
			}
		})
	}
}
