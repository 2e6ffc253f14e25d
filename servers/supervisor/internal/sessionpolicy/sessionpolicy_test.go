package sessionpolicy

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
)

func lifetimes(maxSeconds, idleSeconds int32) *configv1alpha1.SessionLifetimes {
	l := &configv1alpha1.SessionLifetimes{}
	if maxSeconds != 0 {
		l.MaxSessionSeconds = ptr.To(maxSeconds)
	}
	if idleSeconds != 0 {
		l.IdleTimeoutSeconds = ptr.To(idleSeconds)
	}
	return l
}

// The bounds are inclusive, and a value outside them is an error, never clamped.
func TestFromSpecBounds(t *testing.T) {
	tests := []struct {
		spec    *configv1alpha1.SessionLifetimes
		want    Policy
		wantErr string
	}{
		{spec: nil, want: Default},
		{spec: lifetimes(0, 0), want: Default},
		{spec: lifetimes(60, 60), want: Policy{Max: time.Minute, Idle: time.Minute}},
		{spec: lifetimes(604800, 604800), want: Policy{Max: 7 * 24 * time.Hour, Idle: 7 * 24 * time.Hour}},
		{spec: lifetimes(0, 32400), want: Policy{Max: 9 * time.Hour, Idle: 9 * time.Hour}},
		{spec: lifetimes(59, 0), wantErr: "spec.sessionLifetimes.maxSessionSeconds must be between 60 and 604800, not 59"},
		{spec: lifetimes(604801, 0), wantErr: "spec.sessionLifetimes.maxSessionSeconds must be between 60 and 604800, not 604801"},
		{spec: lifetimes(-5, 0), wantErr: "spec.sessionLifetimes.maxSessionSeconds must be between 60 and 604800, not -5"},
		{spec: lifetimes(0, 59), wantErr: "spec.sessionLifetimes.idleTimeoutSeconds must be between 60 and 604800, not 59"},
		{spec: lifetimes(0, 32401), wantErr: "spec.sessionLifetimes.idleTimeoutSeconds (32401) must not exceed the session's maximum length (32400 seconds)"},
		{spec: lifetimes(120, 121), wantErr: "spec.sessionLifetimes.idleTimeoutSeconds (121) must not exceed the session's maximum length (120 seconds)"},
	}
	for _, tt := range tests {
		got, err := FromSpec(tt.spec)
		switch {
		case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
			t.Errorf("FromSpec(%+v): error %v, want %q", tt.spec, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("FromSpec(%+v) = %+v, %v; want %+v", tt.spec, got, err, tt.want)
		}
	}
}

// A client's values only ever shorten its issuer's.
func TestShortenedBy(t *testing.T) {
	issuer := Policy{Max: time.Hour, Idle: 10 * time.Minute}
	tests := []struct {
		client *configv1alpha1.SessionLifetimes
		want   Policy
	}{
		{client: nil, want: issuer},
		{client: lifetimes(600, 0), want: Policy{Max: 10 * time.Minute, Idle: 10 * time.Minute}},
		{client: lifetimes(300, 0), want: Policy{Max: 5 * time.Minute}}, // the maximum comes before any idle timeout
		{client: lifetimes(7200, 1200), want: issuer},
		{client: lifetimes(0, 120), want: Policy{Max: time.Hour, Idle: 2 * time.Minute}},
	}
	for _, tt := range tests {
		if got := issuer.ShortenedBy(tt.client); got != tt.want {
			t.Errorf("ShortenedBy(%+v) = %+v, want %+v", tt.client, got, tt.want)
		}
	}
	if got := Default.ShortenedBy(lifetimes(0, 600)); got != (Policy{Max: 9 * time.Hour, Idle: 10 * time.Minute}) {
		t.Errorf("a client's idle timeout on an issuer without one: %+v", got)
	}
}

func TestEndAndEnded(t *testing.T) {
	login := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	p := Policy{Max: time.Hour, Idle: 15 * time.Minute}
	tests := []struct {
		lastRefresh, now time.Time
		wantEnd          time.Time
		wantWhy          string
	}{
		{now: login.Add(14 * time.Minute), wantEnd: login.Add(15 * time.Minute)},
		{now: login.Add(15 * time.Minute), wantEnd: login.Add(15 * time.Minute), wantWhy: "the session was idle for more than 15m0s"},
		{lastRefresh: login.Add(50 * time.Minute), now: login.Add(59 * time.Minute), wantEnd: login.Add(time.Hour)},
		{lastRefresh: login.Add(50 * time.Minute), now: login.Add(time.Hour), wantEnd: login.Add(time.Hour), wantWhy: "the session reached its maximum length of 1h0m0s"},
		{lastRefresh: login.Add(20 * time.Minute), now: login.Add(36 * time.Minute), wantEnd: login.Add(35 * time.Minute), wantWhy: "the session was idle for more than 15m0s"},
	}
	for _, tt := range tests {
		if got := p.End(login, tt.lastRefresh); !got.Equal(tt.wantEnd) {
			t.Errorf("End(login, %v) = %v, want %v", tt.lastRefresh, got, tt.wantEnd)
		}
		if got := p.Ended(login, tt.lastRefresh, tt.now); got != tt.wantWhy {
			t.Errorf("Ended(login, %v, %v) = %q, want %q", tt.lastRefresh, tt.now, got, tt.wantWhy)
		}
	}
	if got := Default.End(login, login.Add(8*time.Hour)); !got.Equal(login.Add(9 * time.Hour)) {
		t.Errorf("without an idle timeout, a session ends %v, want nine hours after the login", got)
	}
}
