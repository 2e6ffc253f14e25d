package certextra

import (
	"reflect"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		extra map[string][]string
		want  string // "" for valid
	}{
		{name: "none"},
		{name: "credential id", extra: map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=x"}}},
		{name: "domain-prefixed", extra: map[string][]string{"example.com/team": {"a"}, "acme.io/Path_With.Upper": {"b"}}},
		{name: "empty key", extra: map[string][]string{"": {"a"}},
			want: `authenticator returned illegal userInfo extra key(s): userInfo extra key "": Required value`},
		{name: "no domain", extra: map[string][]string{"scopes": {"a"}},
			want: `authenticator returned illegal userInfo extra key(s): userInfo extra key "scopes": Invalid value: "scopes": must be a domain-prefixed path (such as "acme.io/foo")`},
		{name: "reserved", extra: map[string][]string{"sub.k8s.io/x": {"a"}},
			want: `authenticator returned illegal userInfo extra key(s): userInfo extra key "sub.k8s.io/x": Invalid value: "sub.k8s.io/x": k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use`},
		{name: "equals sign", extra: map[string][]string{"example.com/a=b": {"a"}},
			want: `authenticator returned illegal userInfo extra key(s): userInfo extra key "example.com/a=b": Invalid value: "example.com/a=b": Pinniped does not allow extra key names to contain equals sign`},
		{name: "several, in key order", extra: map[string][]string{"b": nil, "kubernetes.io/a": nil},
			want: `authenticator returned illegal userInfo extra key(s): [userInfo extra key "b": Invalid value: "b": must be a domain-prefixed path (such as "acme.io/foo"), userInfo extra key "kubernetes.io/a": Invalid value: "kubernetes.io/a": k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.extra)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// The encoding is upstream's (sorted key=value OUs, values unescaped), and decoding gives back the
// extras.
func TestRoundTrip(t *testing.T) {
	extra := map[string][]string{
		"example.com/x": {"v"},
		"authentication.kubernetes.io/credential-id": {"b", "a=c"},
	}
	ous := OrganizationalUnits(extra)
	want := []string{
		"authentication.kubernetes.io/credential-id=a=c",
		"authentication.kubernetes.io/credential-id=b",
		"example.com/x=v",
	}
	if !reflect.DeepEqual(ous, want) {
		t.Fatalf("got %q, want %q", ous, want)
	}
	back, err := FromOrganizationalUnits(ous)
	if err != nil {
		t.Fatal(err)
	}
	wantBack := map[string][]string{
		"example.com/x": {"v"},
		"authentication.kubernetes.io/credential-id": {"a=c", "b"},
	}
	if !reflect.DeepEqual(back, wantBack) {
		t.Errorf("got %v, want %v", back, wantBack)
	}
	if got, err := FromOrganizationalUnits(nil); got != nil || err != nil {
		t.Errorf("no OUs: got %v, %v", got, err)
	}
	if _, err := FromOrganizationalUnits([]string{"no-equals"}); err == nil {
		t.Error("an OU that is not key=value was read")
	}
}
