package activedirectoryidp

import (
	"context"
	"errors"
	"strings"
	"testing"

	goldap "github.com/go-ldap/ldap/v3"
	"github.com/google/go-cmp/cmp"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/internal/tlsprofile"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
)

func minimalSpec() idpv1alpha1.ActiveDirectoryIdentityProviderSpec {
	return idpv1alpha1.ActiveDirectoryIdentityProviderSpec{Host: "dc.example.test", Bind: idpv1alpha1.ActiveDirectoryIdentityProviderBind{SecretName: "bind"}}
}

func TestDefaults(t *testing.T) {
	cfg := ConfigFromSpec(minimalSpec(), nil, "svc@example.test", "pw")
	if !NeedsSearchBase(cfg) {
		t.Fatal("a spec without bases needs the defaultNamingContext")
	}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "search bases are not resolved") {
		t.Errorf("New without bases = %v, want an error naming ResolveSearchBases", err)
	}
	cfg.UserSearch.Base, cfg.GroupSearch.Base = "DC=example,DC=test", "DC=example,DC=test"
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := ldapclient.Config{
		Host: "dc.example.test", BindUsername: "svc@example.test", BindPassword: "pw",
		UserSearch: ldapclient.UserSearch{
			Base:              "DC=example,DC=test",
			Filter:            "(&(objectClass=person)(!(objectClass=computer))(!(showInAdvancedViewOnly=TRUE))(|(sAMAccountName={})(mail={})(userPrincipalName={}))(sAMAccountType=805306368))",
			UsernameAttribute: "userPrincipalName",
			UIDAttribute:      "objectGUID",
		},
		GroupSearch: ldapclient.GroupSearch{
			Base:                   "DC=example,DC=test",
			Filter:                 "(&(objectClass=group)(member:1.2.840.113556.1.4.1941:={}))",
			UserAttributeForFilter: "dn",
			GroupNameAttribute:     "sAMAccountName",
		},
	}
	if diff := cmp.Diff(want, p.Config(), cmp.AllowUnexported(tlsprofile.Profile{})); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestSpecOverridesDefaults(t *testing.T) {
	spec := minimalSpec()
	spec.UserSearch = idpv1alpha1.ActiveDirectoryIdentityProviderUserSearch{
		Base: "OU=people,DC=example,DC=test", Filter: "sAMAccountName={}",
		Attributes: idpv1alpha1.ActiveDirectoryIdentityProviderUserSearchAttributes{Username: "sAMAccountName", UID: "objectSid"},
	}
	spec.GroupSearch = idpv1alpha1.ActiveDirectoryIdentityProviderGroupSearch{
		Base: "OU=groups,DC=example,DC=test", Filter: "member={}", UserAttributeForFilter: "dn",
		Attributes:       idpv1alpha1.ActiveDirectoryIdentityProviderGroupSearchAttributes{GroupName: "cn"},
		SkipGroupRefresh: true,
	}
	cfg := ConfigFromSpec(spec, nil, "svc", "pw")
	if NeedsSearchBase(cfg) {
		t.Error("a spec with both bases needs no defaultNamingContext")
	}
	resolved, err := ResolveSearchBases(context.Background(), cfg)
	if err != nil || resolved.UserSearch.Base != spec.UserSearch.Base {
		t.Errorf("ResolveSearchBases with both bases set = %v, %v; want cfg unchanged without connecting", resolved.UserSearch.Base, err)
	}
	got, hooks := withDefaults(cfg)
	cfg.UserSearch.Filter, cfg.GroupSearch.Filter = "(sAMAccountName={})", "(member={})"
	p, err := New(got)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cfg, p.Config(), cmp.AllowUnexported(tlsprofile.Profile{})); diff != "" {
		t.Errorf("explicit spec (-want +got):\n%s", diff)
	}
	if hooks.UID != nil || hooks.GroupName != nil {
		t.Error("explicit UID and group name attributes must be used as they are")
	}
	if hooks.CheckRefresh == nil {
		t.Error("the account checks apply whatever the spec")
	}
}

func TestResolveSearchBasesReportsConfigErrors(t *testing.T) {
	_, err := ResolveSearchBases(context.Background(), ConfigFromSpec(minimalSpec(), []byte("not PEM"), "svc", ""))
	for _, want := range []string{"reading the defaultNamingContext", "CA bundle holds no PEM certificate", "bind username and password are required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v, want it to contain %q", err, want)
		}
	}
}

func TestGUIDString(t *testing.T) {
	raw := []byte{0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
	got, err := guidString(raw)
	if want := "00112233-4455-6677-8899-aabbccddeeff"; err != nil || got != want {
		t.Errorf("guidString = %q, %v; want %q", got, err, want)
	}
	if _, err := guidString(raw[:15]); err == nil {
		t.Error("a 15-byte GUID was accepted")
	}
}

func TestGroupNameWithDomain(t *testing.T) {
	tests := []struct {
		dn, sam, want, wantErr string
	}{
		{dn: "CN=Seals,OU=Groups,DC=corp,DC=example,DC=test", sam: "seals", want: "seals@corp.example.test"},
		{dn: "cn=x,dc=lower,dc=case", sam: "x", want: "x@lower.case"},
		{dn: "CN=local,O=nodomain", sam: "local", want: "local"},
		{dn: "CN=nosam,DC=example", wantErr: `want exactly one non-empty value`},
		{dn: "not a DN", sam: "x", wantErr: "parsing its DN"},
	}
	for _, tt := range tests {
		e := goldap.NewEntry(tt.dn, map[string][]string{})
		if tt.sam != "" {
			e = goldap.NewEntry(tt.dn, map[string][]string{"sAMAccountName": {tt.sam}})
		}
		got, err := groupNameWithDomain(e)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error = %v, want %q", tt.dn, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: = %q, %v; want %q", tt.dn, got, err, tt.want)
		}
	}
}

func TestCheckAccount(t *testing.T) {
	login := ldapclient.Identity{RefreshAttributes: map[string]string{"pwdLastSet": "133000000000000000"}}
	entry := func(attrs map[string]string) *goldap.Entry {
		m := map[string][]string{}
		for k, v := range attrs {
			m[k] = []string{v}
		}
		return goldap.NewEntry("CN=pinny,CN=Users,DC=example", m)
	}
	tests := []struct {
		name    string
		attrs   map[string]string
		prev    ldapclient.Identity
		wantErr error
		wantMsg string
	}{
		{name: "unchanged", attrs: map[string]string{"userAccountControl": "512", "msDS-User-Account-Control-Computed": "0", "pwdLastSet": "133000000000000000"}, prev: login},
		{name: "no computed flags", attrs: map[string]string{"userAccountControl": "512", "pwdLastSet": "133000000000000000"}, prev: login},
		{name: "disabled", attrs: map[string]string{"userAccountControl": "514", "pwdLastSet": "133000000000000000"}, prev: login, wantErr: ErrAccountDisabled},
		{name: "locked", attrs: map[string]string{"userAccountControl": "512", "msDS-User-Account-Control-Computed": "16", "pwdLastSet": "133000000000000000"}, prev: login, wantErr: ErrAccountLocked},
		{name: "password changed", attrs: map[string]string{"userAccountControl": "512", "pwdLastSet": "133000000000000001"}, prev: login, wantErr: ErrPasswordChanged},
		{name: "nothing kept at login", attrs: map[string]string{"userAccountControl": "512", "pwdLastSet": "133000000000000000"}, wantErr: ErrPasswordChanged},
		{name: "garbage flags", attrs: map[string]string{"userAccountControl": "x"}, prev: login, wantMsg: `attribute userAccountControl of "CN=pinny,CN=Users,DC=example" is "x", not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkAccount(entry(tt.attrs), tt.prev)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("error = %v, want %v", err, tt.wantErr)
				}
			case tt.wantMsg != "":
				if err == nil || err.Error() != tt.wantMsg {
					t.Errorf("error = %v, want %q", err, tt.wantMsg)
				}
			case err != nil:
				t.Errorf("error = %v, want none", err)
			}
		})
	}
}
