// Package sessionpolicy is how long a Supervisor session may last: the administrator's absolute
// length and idle timeout of a FederationDomain (spec.sessionLifetimes), which an OIDCClient's
// own may only shorten. The token endpoint ends a session whose time is up at its next refresh
// or token exchange, and its records are kept only as long as the session can live.
package sessionpolicy

import (
	"fmt"
	"time"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
)

// Bounds of the configurable lifetimes, which the CRD's markers repeat: long enough for a
// kiosk's week, short enough that a lost laptop's session does not outlive it by much; never
// under a minute, as access and ID tokens live two.
const (
	MinSeconds = 60
	MaxSeconds = 7 * 24 * 60 * 60
)

// Policy bounds a session: it ends Max after the login, or Idle after its last use (the login
// or its last refresh) when Idle is not zero.
type Policy struct {
	Max, Idle time.Duration
}

// Default is the policy of a FederationDomain that sets none: Pinniped's fixed nine hours from
// the login, with no idle timeout.
var Default = Policy{Max: 9 * time.Hour}

// Longest is the longest any session may last, so the longest its records are kept.
const Longest = MaxSeconds * time.Second

// FromSpec is the policy spec sets over Default, or an error saying which value is out of
// range; nil is Default.
func FromSpec(spec *configv1alpha1.SessionLifetimes) (Policy, error) {
	p := Default
	if spec == nil {
		return p, nil
	}
	if s := spec.MaxSessionSeconds; s != nil {
		if err := inRange("maxSessionSeconds", *s); err != nil {
			return Policy{}, err
		}
		p.Max = time.Duration(*s) * time.Second
	}
	if s := spec.IdleTimeoutSeconds; s != nil {
		if err := inRange("idleTimeoutSeconds", *s); err != nil {
			return Policy{}, err
		}
		p.Idle = time.Duration(*s) * time.Second
		if p.Idle > p.Max {
			return Policy{}, fmt.Errorf("spec.sessionLifetimes.idleTimeoutSeconds (%d) must not exceed the session's maximum length (%d seconds)", *s, int64(p.Max/time.Second))
		}
	}
	return p, nil
}

func inRange(field string, seconds int32) error {
	if seconds < MinSeconds || seconds > MaxSeconds {
		return fmt.Errorf("spec.sessionLifetimes.%s must be between %d and %d, not %d", field, MinSeconds, MaxSeconds, seconds)
	}
	return nil
}

// ShortenedBy is p with each limit replaced by o's where o's is shorter: a client's own limits
// never lengthen its issuer's sessions. o is the client's spec, nil when it sets none.
func (p Policy) ShortenedBy(o *configv1alpha1.SessionLifetimes) Policy {
	if o == nil {
		return p
	}
	if s := o.MaxSessionSeconds; s != nil {
		p.Max = min(p.Max, time.Duration(*s)*time.Second)
	}
	if s := o.IdleTimeoutSeconds; s != nil {
		if d := time.Duration(*s) * time.Second; p.Idle == 0 || d < p.Idle {
			p.Idle = d
		}
	}
	if p.Idle > p.Max {
		p.Idle = 0 // the shortened maximum comes first anyway
	}
	return p
}

// End is when a session that started at login and was last used at lastUsed ends. A zero
// lastUsed (a session stored by Pinniped or before idle timeouts) counts from the login.
func (p Policy) End(login, lastUsed time.Time) time.Time {
	end := login.Add(p.Max)
	if p.Idle > 0 {
		if lastUsed.IsZero() {
			lastUsed = login
		}
		if idle := lastUsed.Add(p.Idle); idle.Before(end) {
			return idle
		}
	}
	return end
}

// Ended says why a session that started at login and was last used at lastUsed has ended at
// now, or "" when it has not.
func (p Policy) Ended(login, lastUsed, now time.Time) string {
	switch {
	case !now.Before(login.Add(p.Max)):
		return fmt.Sprintf("the session reached its maximum length of %s", p.Max)
	case !now.Before(p.End(login, lastUsed)):
		return fmt.Sprintf("the session was idle for more than %s", p.Idle)
	}
	return ""
}
