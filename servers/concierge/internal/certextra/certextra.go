// Package certextra carries a user's extras in a client certificate as Pinniped v0.40+ does: each
// (key, value) pair is one OrganizationalUnit "key=value", so the Concierge's certificates keep
// everything an authenticator said about the user. The kube-apiserver ignores OUs; the impersonation
// proxy reads them back from the certificates it signed. Keys are checked with upstream's rules
// first, so that a key can never hold "=" and a pair always splits back the same way.
package certextra

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// credentialIDKey is the extra client-go's authenticators add to identify a credential (the JWT's
// jti, say); upstream lets it through unchecked.
const credentialIDKey = "authentication.kubernetes.io/credential-id"

// Validate refuses extra keys upstream refuses: each must be a domain-prefixed path ("acme.io/foo")
// outside the domains Kubernetes reserves, without "=". Keys are checked in sorted order, and every
// error is reported, as upstream words them.
func Validate(extra map[string][]string) error {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if k == credentialIDKey {
			continue
		}
		path := field.NewPath(fmt.Sprintf("userInfo extra key %q", k))
		errs = append(errs, utilvalidation.IsDomainPrefixedPath(path, k)...)
		if reservedDomain(k) {
			errs = append(errs, field.Invalid(path, k, "k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use"))
		}
		if strings.Contains(k, "=") {
			errs = append(errs, field.Invalid(path, k, "Pinniped does not allow extra key names to contain equals sign"))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("authenticator returned illegal userInfo extra key(s): %w", errs.ToAggregate())
	}
	return nil
}

func reservedDomain(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range []string{"k8s.io", "kubernetes.io"} {
		if domain == d || strings.HasSuffix(domain, "."+d) {
			return true
		}
	}
	return false
}

// OrganizationalUnits encodes extra (already Validated) as one "key=value" per pair, the whole list
// sorted bytewise; a key with several values repeats.
func OrganizationalUnits(extra map[string][]string) []string {
	var ous []string
	for k, values := range extra {
		for _, v := range values {
			ous = append(ous, k+"="+v)
		}
	}
	slices.Sort(ous)
	return ous
}

// FromOrganizationalUnits decodes what OrganizationalUnits encoded; nil when there are no OUs. An OU
// that is not "key=value" was not written by OrganizationalUnits, so the certificate is refused
// rather than read in part.
func FromOrganizationalUnits(ous []string) (map[string][]string, error) {
	if len(ous) == 0 {
		return nil, nil
	}
	extra := make(map[string][]string, len(ous))
	for _, ou := range ous {
		k, v, ok := strings.Cut(ou, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("certificate organizational unit %q is not a key=value user extra", ou)
		}
		extra[k] = append(extra[k], v)
	}
	return extra, nil
}
