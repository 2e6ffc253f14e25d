// Package activedirectoryidp is the connector of ActiveDirectoryIdentityProviders: ldapidp's
// connector on an ldapclient with Active Directory's defaults. Search bases come from the
// domain's defaultNamingContext; users are found by sAMAccountName, mail or userPrincipalName,
// named by userPrincipalName and identified by objectGUID; groups are found through nested
// membership and named sAMAccountName@domain. A refresh also fails when the account was
// disabled, locked out, or had its password changed since login.
package activedirectoryidp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	goldap "github.com/go-ldap/ldap/v3"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
)

// Defaults of an ActiveDirectoryIdentityProvider spec.
const (
	DefaultUsernameAttribute = "userPrincipalName"
	DefaultUIDAttribute      = "objectGUID"
	// DefaultUserSearchFilter matches user accounts of people (sAMAccountType
	// SAM_NORMAL_USER_ACCOUNT, not computers, not hidden system objects) by any of their
	// login names.
	DefaultUserSearchFilter = "(&(objectClass=person)(!(objectClass=computer))(!(showInAdvancedViewOnly=TRUE))" +
		"(|(sAMAccountName={})(mail={})(userPrincipalName={}))(sAMAccountType=805306368))"
	// DefaultGroupSearchFilter matches the groups the user is a member of, directly or through
	// nested groups (LDAP_MATCHING_RULE_IN_CHAIN).
	DefaultGroupSearchFilter = "(&(objectClass=group)(member:1.2.840.113556.1.4.1941:={}))"
	// defaultGroupNameAttribute is what the default group name is made of, with the domain.
	defaultGroupNameAttribute = "sAMAccountName"
)

// Attributes read at login and at refresh for the account checks.
const (
	attrPwdLastSet          = "pwdLastSet"
	attrUserAccountControl  = "userAccountControl"
	attrUserAccountComputed = "msDS-User-Account-Control-Computed"
	attrDefaultNamingCtx    = "defaultNamingContext"
)

// Account flags (MS-ADTS 2.2.16): ACCOUNTDISABLE in userAccountControl, LOCKOUT in
// msDS-User-Account-Control-Computed.
const (
	uacAccountDisable = 0x2
	uacLockout        = 0x10
)

var (
	// ErrAccountDisabled means the account was disabled since login.
	ErrAccountDisabled = errors.New("user account is disabled")
	// ErrAccountLocked means the account is locked out.
	ErrAccountLocked = errors.New("user account is locked")
	// ErrPasswordChanged means the password was changed (pwdLastSet moved) since login.
	ErrPasswordChanged = errors.New("user's password changed since login")
)

// ConfigFromSpec builds the configuration of a spec, the CA bundle its spec.tls resolves to,
// and the username and password of its bind Secret. Defaults are left empty: New fills them,
// and ResolveSearchBases fills the search bases.
func ConfigFromSpec(spec idpv1alpha1.ActiveDirectoryIdentityProviderSpec, caBundle []byte, bindUsername, bindPassword string) ldapclient.Config {
	return ldapclient.Config{
		Host:         spec.Host,
		CABundle:     caBundle,
		BindUsername: bindUsername,
		BindPassword: bindPassword,
		UserSearch: ldapclient.UserSearch{
			Base:              spec.UserSearch.Base,
			Filter:            spec.UserSearch.Filter,
			UsernameAttribute: spec.UserSearch.Attributes.Username,
			UIDAttribute:      spec.UserSearch.Attributes.UID,
		},
		GroupSearch: ldapclient.GroupSearch{
			Base:                   spec.GroupSearch.Base,
			Filter:                 spec.GroupSearch.Filter,
			UserAttributeForFilter: spec.GroupSearch.UserAttributeForFilter,
			GroupNameAttribute:     spec.GroupSearch.Attributes.GroupName,
			SkipGroupRefresh:       spec.GroupSearch.SkipGroupRefresh,
		},
	}
}

// NeedsSearchBase reports whether a search base is left to the domain's defaultNamingContext.
func NeedsSearchBase(cfg ldapclient.Config) bool {
	return cfg.UserSearch.Base == "" || cfg.GroupSearch.Base == ""
}

// ResolveSearchBases fills the empty search bases with the defaultNamingContext of the
// server's RootDSE. It connects only when a base is empty.
func ResolveSearchBases(ctx context.Context, cfg ldapclient.Config) (ldapclient.Config, error) {
	if !NeedsSearchBase(cfg) {
		return cfg, nil
	}
	root, err := ldapclient.RootDSE(ctx, cfg, attrDefaultNamingCtx)
	if err != nil {
		return cfg, fmt.Errorf("reading the defaultNamingContext: %w", err)
	}
	base := root.GetAttributeValue(attrDefaultNamingCtx)
	if base == "" {
		return cfg, fmt.Errorf("the RootDSE of %q has no %s", cfg.Host, attrDefaultNamingCtx)
	}
	if cfg.UserSearch.Base == "" {
		cfg.UserSearch.Base = base
	}
	if cfg.GroupSearch.Base == "" {
		cfg.GroupSearch.Base = base
	}
	return cfg, nil
}

// New fills Active Directory's defaults into cfg and returns the Provider. The search bases
// must be set: by the spec, or by ResolveSearchBases. It does not connect.
func New(cfg ldapclient.Config) (*ldapclient.Provider, error) {
	if NeedsSearchBase(cfg) {
		return nil, errors.New("invalid Active Directory configuration: the search bases are not resolved (see ResolveSearchBases)")
	}
	cfg, hooks := withDefaults(cfg)
	return ldapclient.NewWithHooks(cfg, hooks)
}

// withDefaults fills the spec's defaults and returns the hooks they need. The default group
// name is the group's sAMAccountName with its domain, so GroupNameAttribute reads
// sAMAccountName then.
func withDefaults(cfg ldapclient.Config) (ldapclient.Config, ldapclient.Hooks) {
	hooks := ldapclient.Hooks{
		RefreshAttributes: []string{attrPwdLastSet, attrUserAccountControl, attrUserAccountComputed},
		CheckRefresh:      checkAccount,
	}
	if cfg.UserSearch.Filter == "" {
		cfg.UserSearch.Filter = DefaultUserSearchFilter
	}
	if cfg.UserSearch.UsernameAttribute == "" {
		cfg.UserSearch.UsernameAttribute = DefaultUsernameAttribute
	}
	if cfg.UserSearch.UIDAttribute == "" {
		cfg.UserSearch.UIDAttribute = DefaultUIDAttribute
	}
	if cfg.UserSearch.UIDAttribute == DefaultUIDAttribute {
		hooks.UID = guidString
	}
	if cfg.GroupSearch.Filter == "" {
		cfg.GroupSearch.Filter = DefaultGroupSearchFilter
	}
	if cfg.GroupSearch.GroupNameAttribute == "" {
		cfg.GroupSearch.GroupNameAttribute = defaultGroupNameAttribute
		hooks.GroupName = groupNameWithDomain
		hooks.GroupAttributes = []string{defaultGroupNameAttribute}
	}
	return cfg, hooks
}

// checkAccount fails a refresh of an account that is disabled or locked out now, or whose
// password changed since login.
func checkAccount(user *goldap.Entry, prev ldapclient.Identity) error {
	uac, err := flags(user, attrUserAccountControl)
	if err != nil {
		return err
	}
	if uac&uacAccountDisable != 0 {
		return ErrAccountDisabled
	}
	computed, err := flags(user, attrUserAccountComputed)
	if err != nil {
		return err
	}
	if computed&uacLockout != 0 {
		return ErrAccountLocked
	}
	now := user.GetAttributeValue(attrPwdLastSet)
	if then, ok := prev.RefreshAttributes[attrPwdLastSet]; !ok || then != now {
		return fmt.Errorf("%w (%s was %q at login, is %q)", ErrPasswordChanged, attrPwdLastSet, then, now)
	}
	return nil
}

// flags parses an integer attribute; a missing one (the server does not compute it) is 0.
func flags(e *goldap.Entry, attr string) (int64, error) {
	v := e.GetAttributeValue(attr)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %s of %q is %q, not a number", attr, e.DN, v)
	}
	return n, nil
}

// guidString renders an objectGUID in its usual form: the first three fields are stored
// little-endian (MS-DTYP 2.3.4.2).
func guidString(raw []byte) (string, error) {
	if len(raw) != 16 {
		return "", fmt.Errorf("a GUID has 16 bytes, got %d", len(raw))
	}
	return fmt.Sprintf("%08x-%04x-%04x-%x-%x",
		binary.LittleEndian.Uint32(raw[0:4]), binary.LittleEndian.Uint16(raw[4:6]), binary.LittleEndian.Uint16(raw[6:8]),
		raw[8:10], raw[10:16]), nil
}

// groupNameWithDomain is "<sAMAccountName>@<domain>", the domain made of the dc= parts of the
// group's DN.
func groupNameWithDomain(g *goldap.Entry) (string, error) {
	values := g.GetAttributeValues(defaultGroupNameAttribute)
	if len(values) != 1 || values[0] == "" {
		return "", fmt.Errorf("entry %q has %d values of attribute %q, want exactly one non-empty value", g.DN, len(values), defaultGroupNameAttribute)
	}
	dn, err := goldap.ParseDN(g.DN)
	if err != nil {
		return "", fmt.Errorf("entry %q: parsing its DN: %w", g.DN, err)
	}
	var domain []string
	for _, rdn := range dn.RDNs {
		for _, a := range rdn.Attributes {
			if strings.EqualFold(a.Type, "dc") {
				domain = append(domain, a.Value)
			}
		}
	}
	if len(domain) == 0 {
		return values[0], nil
	}
	return values[0] + "@" + strings.Join(domain, "."), nil
}
