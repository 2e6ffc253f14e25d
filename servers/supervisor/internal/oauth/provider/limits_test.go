package provider

import (
	"fmt"
	"testing"
	"time"
)

func TestLoginLimiter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := NewLoginLimiter(func() time.Time { return now })
	for i := range loginBurst {
		if !l.allow(loginKey("ldap/ns/corp", "pinny")) {
			t.Fatalf("attempt %d of the burst refused", i+1)
		}
	}
	for _, user := range []string{"pinny", "PINNY", " Pinny "} {
		if l.allow(loginKey("ldap/ns/corp", user)) {
			t.Errorf("attempt as %q after the burst allowed", user)
		}
	}
	if !l.allow(loginKey("ldap/ns/corp", "walrus")) {
		t.Error("another user is limited too")
	}
	if !l.allow(loginKey("ldap/ns/other", "pinny")) {
		t.Error("the same username at another identity provider is limited too")
	}
	now = now.Add(loginInterval)
	if !l.allow(loginKey("ldap/ns/corp", "pinny")) || l.allow(loginKey("ldap/ns/corp", "pinny")) {
		t.Error("after one interval, want exactly one more attempt")
	}
}

func TestLoginLimiterMemoryIsBounded(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := NewLoginLimiter(func() time.Time { return now })
	for i := range maxLoginLimiters {
		l.allow(loginKey("idp", fmt.Sprint("user-", i)))
	}
	// Everyone is mid-burst: one is forgotten to make room.
	l.allow(loginKey("idp", "one-more"))
	if len(l.keys) != maxLoginLimiters {
		t.Errorf("%d users remembered, want %d", len(l.keys), maxLoginLimiters)
	}
	// Once their buckets refilled, the idle users are forgotten.
	now = now.Add(loginBurst * loginInterval)
	l.allow(loginKey("idp", "latecomer"))
	if len(l.keys) != 1 {
		t.Errorf("%d users remembered after they went idle, want 1", len(l.keys))
	}
}
