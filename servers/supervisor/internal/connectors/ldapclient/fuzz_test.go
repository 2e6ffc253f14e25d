package ldapclient

import (
	"bytes"
	"testing"

	ber "github.com/go-asn1-ber/asn1-ber"
	goldap "github.com/go-ldap/ldap/v3"
)

// filterTemplates are search filters as operators write them: the defaults of LDAP and Active
// Directory identity providers and the usual customizations. Users choose the value put into
// the user search (their login name); the directory chooses the one put into the group search.
var filterTemplates = []string{
	"uid={}",
	"member={}",
	"(&(objectClass=inetOrgPerson)(mail={}))",
	"(&(objectClass=person)(!(objectClass=computer))(!(showInAdvancedViewOnly=TRUE))" +
		"(|(sAMAccountName={})(mail={})(userPrincipalName={}))(sAMAccountType=805306368))",
	"(&(objectClass=group)(member:1.2.840.113556.1.4.1941:={}))",
	"(|(uid={})(cn={}))",
	"(mail={}@example.com)",
}

// probe is a value needing no escaping that stands in for the fuzzed one in the reference filter.
const probe = "sealionprobe"

// FuzzFilterValue puts arbitrary values into the search filters. Whatever the value, the filter
// compiles, and it compiles to the very filter the operator wrote with the value as a literal
// assertion value: the same tree of filter kinds (no `*` turning equality into a substring
// match or a presence test, no `)(` adding a clause), and every assertion value the template's
// with the value in place of "{}", byte for byte.
func FuzzFilterValue(f *testing.F) {
	for _, v := range []string{"pinny", "*", "a)(uid=*", `back\slash`, "cn=a\x00b,dc=x", "", "\xff\xfe", "\\2a", "é(ü)", "x*y*z", "))(|(objectClass=*"} {
		for i := range filterTemplates {
			f.Add(uint8(i), v)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		c := validConfig()
		c.UserSearch.Filter = filterTemplates[int(which)%len(filterTemplates)]
		c, err := c.withDefaults()
		if err != nil {
			t.Fatalf("template %q: %v", c.UserSearch.Filter, err)
		}
		want, err := goldap.CompileFilter(substitute(c.UserSearch.Filter, probe))
		if err != nil {
			t.Fatal(err)
		}
		filter := substitute(c.UserSearch.Filter, value)
		got, err := goldap.CompileFilter(filter)
		if err != nil {
			t.Fatalf("value %q makes filter %q, which does not compile: %v", value, filter, err)
		}
		if path := sameFilter(want, got, []byte(value)); path != "" {
			t.Fatalf("value %q makes filter %q mean something else than template %q: %s", value, filter, c.UserSearch.Filter, path)
		}
	})
}

// sameFilter compares two compiled filters node by node, expecting every leaf of got to be
// want's with probe replaced by value, and says where they differ ("" when they do not).
func sameFilter(want, got *ber.Packet, value []byte) string {
	if want.Identifier != got.Identifier || len(want.Children) != len(got.Children) {
		return "a " + got.Description + " where the template has a " + want.Description
	}
	if len(want.Children) == 0 {
		if expected := bytes.ReplaceAll(want.Data.Bytes(), []byte(probe), value); !bytes.Equal(expected, got.Data.Bytes()) {
			return "assertion " + want.Description + " is " + got.Data.String() + ", not " + string(expected)
		}
	}
	for i := range want.Children {
		if path := sameFilter(want.Children[i], got.Children[i], value); path != "" {
			return path
		}
	}
	return ""
}
