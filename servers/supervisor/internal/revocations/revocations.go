// Package revocations decides which Supervisor sessions the SessionRevocations end. The token
// endpoint of every replica asks it at each refresh, code redemption and token exchange, from the
// informer's cache, so that a revocation takes effect as soon as the replica sees the object; the
// sessionrevocation controller uses the same rule to find the stored sessions to delete.
package revocations

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	configlisters "sealion.dev/core/generated/supervisor/listers/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
)

// Matches reports whether rev ends the session s of the FederationDomain named federationDomain
// ("" when the session does not say which: one stored before sessions recorded it, whose
// revocations naming a FederationDomain are left to the token endpoint, which knows it).
func Matches(rev *configv1alpha1.SessionRevocation, federationDomain string, s *sessions.Session) bool {
	spec := &rev.Spec
	if spec.FederationDomainName != "" && spec.FederationDomainName != federationDomain {
		return false
	}
	if !startedBefore(rev, s.Custom.LoginTime) {
		return false
	}
	if len(spec.Usernames) == 0 && len(spec.Groups) == 0 {
		return true
	}
	return slices.Contains(spec.Usernames, s.Custom.Username) ||
		slices.ContainsFunc(s.Custom.Groups, func(g string) bool { return slices.Contains(spec.Groups, g) })
}

// startedBefore reports whether a login at loginTime is before rev's startedBefore, or, when it
// has none, not after the second rev was created (creation times are whole seconds: a login in the
// same second as a revocation is taken to precede it). A session that does not know its login
// time (Pinniped's, before it recorded one) started before anything.
func startedBefore(rev *configv1alpha1.SessionRevocation, loginTime time.Time) bool {
	if rev.Spec.StartedBefore != nil {
		return loginTime.Before(rev.Spec.StartedBefore.Time)
	}
	return loginTime.Before(rev.CreationTimestamp.Add(time.Second))
}

// Checker finds the SessionRevocations that end a session, in an informer's cache. A nil Checker
// ends none.
type Checker struct {
	// Revocations are the SessionRevocations of the Supervisor's namespace.
	Revocations configlisters.SessionRevocationNamespaceLister
}

// Ended reports whether a SessionRevocation ends the session s of the FederationDomain named
// federationDomain. There are few SessionRevocations: each is checked in turn.
func (c *Checker) Ended(federationDomain string, s *sessions.Session) bool {
	if c == nil {
		return false
	}
	revs, err := c.Revocations.List(labels.Everything())
	if err != nil { // a cache lister fails only on a bad selector
		return false
	}
	return slices.ContainsFunc(revs, func(rev *configv1alpha1.SessionRevocation) bool {
		return Matches(rev, federationDomain, s)
	})
}
