// Package reservednames keeps external identities out of the names Kubernetes reserves for its own
// users and groups: every name starting with "system:" (system:masters, system:nodes,
// system:kube-controller-manager, ...). An upstream identity provider, a webhook or a JWT claim that
// yields such a name would otherwise be turned into a cluster credential carrying the cluster's own
// powers, so the Concierge refuses to issue one and the Supervisor refuses to log such a user in,
// whatever the authenticator or identity provider said.
//
// The only way around the refusal is an explicit list of exact names, per username and per group,
// which an operator writes in the server's configuration file.
package reservednames

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Prefix starts every name Kubernetes reserves. It is compared without regard to case: a
// "System:Masters" has no power in RBAC, but it reads as one in audit logs, and an identity
// provider's own case rules are not ours to guess.
const Prefix = "system:"

// IsReserved reports whether name is in Kubernetes' reserved namespace.
func IsReserved(name string) bool {
	return len(name) >= len(Prefix) && strings.EqualFold(name[:len(Prefix)], Prefix)
}

// Exceptions are the reserved names an operator explicitly allows: exact usernames and exact
// groups, never patterns. The zero value allows none. Field names are the configuration file's.
type Exceptions struct {
	// Usernames are exact usernames starting with "system:" that may still be issued.
	Usernames []string `json:"usernames,omitempty"`
	// Groups are exact group names starting with "system:" that may still be issued.
	Groups []string `json:"groups,omitempty"`
}

// Validate refuses entries that could not mean what an operator wants: a name outside the reserved
// namespace (it needs no exception, so it is most likely a typo) or a pattern.
func (e Exceptions) Validate() error {
	var errs []error
	for _, f := range []struct {
		field string
		names []string
	}{{"usernames", e.Usernames}, {"groups", e.Groups}} {
		field := f.field
		for _, name := range f.names {
			switch {
			case !IsReserved(name):
				errs = append(errs, fmt.Errorf("%s: %q does not start with %q and needs no exception", field, name, Prefix))
			case strings.ContainsAny(name, "*?"):
				errs = append(errs, fmt.Errorf("%s: %q: exceptions are exact names, not patterns", field, name))
			}
		}
	}
	return errors.Join(errs...)
}

// Refused says why an identity with this username and these groups may not be issued, or "" when
// it may. The reason names the first offending name: names are not secrets, and an operator reading
// the log needs to know which one.
func (e Exceptions) Refused(username string, groups []string) string {
	if IsReserved(username) && !slices.Contains(e.Usernames, username) {
		return fmt.Sprintf("username %q is reserved by Kubernetes", username)
	}
	for _, g := range groups {
		if IsReserved(g) && !slices.Contains(e.Groups, g) {
			return fmt.Sprintf("group %q is reserved by Kubernetes", g)
		}
	}
	return ""
}
