package device

import (
	"bytes"
	"crypto/rand"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ory/fosite"
)

func TestUserCodes(t *testing.T) {
	if math.Abs(UserCodeBits-34.58) > 0.01 {
		t.Errorf("a user code carries %.2f bits, want about 34.58", UserCodeBits)
	}
	seen := map[string]bool{}
	counts := map[rune]int{}
	const codes = 5000
	for range codes {
		code, err := NewUserCode(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if normalized, ok := NormalizeUserCode(code); !ok || normalized != code {
			t.Fatalf("a drawn code %q does not read back (%q, %v)", code, normalized, ok)
		}
		if seen[code] {
			t.Errorf("code %q drawn twice in %d", code, codes)
		}
		seen[code] = true
		for _, r := range code {
			counts[r]++
		}
	}
	// Uniform: each of the 20 letters about 2,000 times in 40,000; a bias towards the first
	// letters (256 % 20 = 16 bytes mapped twice) would give them about 2,100 or more.
	for _, r := range userCodeAlphabet {
		if n := counts[r]; n < 1800 || n > 2200 {
			t.Errorf("letter %c drawn %d times in %d, want about 2000", r, n, codes*UserCodeLength)
		}
	}
	for _, ambiguous := range "AEIOU0123456789" {
		if counts[ambiguous] > 0 {
			t.Errorf("user codes hold %c", ambiguous)
		}
	}
}

// Bytes that would bias the draw are skipped, not folded into the alphabet.
func TestUserCodeRejectsBiasedBytes(t *testing.T) {
	random := bytes.NewReader(append(bytes.Repeat([]byte{255, 240}, 4), 0, 1, 2, 3, 4, 5, 6, 19))
	code, err := NewUserCode(random)
	if err != nil || code != "BCDFGHJZ" {
		t.Errorf("code %q (%v), want BCDFGHJZ from the bytes below 240", code, err)
	}
	if _, err := NewUserCode(strings.NewReader("")); err == nil {
		t.Error("a user code drawn from nothing")
	}
}

func TestNormalizeUserCode(t *testing.T) {
	for typed, want := range map[string]string{
		"BCDF-GHJK": "BCDFGHJK", "bcdf-ghjk": "BCDFGHJK", " bcdf ghjk ": "BCDFGHJK", "BcDfGhJk": "BCDFGHJK",
		"BCDF-GHJ": "", "BCDF-GHJKL": "", "BCDF-GHJ0": "", "ACDF-GHJK": "", "BCDF_GHJK": "", "ВCDF-GHJK": "",
	} {
		got, ok := NormalizeUserCode(typed)
		if got != want || ok != (want != "") {
			t.Errorf("NormalizeUserCode(%q) = %q, %v; want %q", typed, got, ok, want)
		}
	}
	if got := FormatUserCode("BCDFGHJK"); got != "BCDF-GHJK" {
		t.Errorf("FormatUserCode = %q", got)
	}
}

func TestDeviceCodes(t *testing.T) {
	a, err := NewDeviceCode()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewDeviceCode()
	if len(a) != 43 || a == b {
		t.Errorf("device codes %q and %q, want 43 characters each, different", a, b)
	}
}

// The grant's error table: what each poll answers, in order, as RFC 8628 section 3.5 says.
func TestPoll(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	fresh := func(s State) *Authorization {
		return &Authorization{State: s, ExpiresAt: t0.Add(Lifetime), Interval: Interval}
	}
	type poll struct {
		after time.Duration // since t0
		want  error
	}
	for name, c := range map[string]struct {
		auth  *Authorization
		polls []poll
		// interval is the interval after the polls.
		interval time.Duration
	}{
		"pending, polled at the interval": {fresh(Pending), []poll{{0, ErrAuthorizationPending}, {5 * time.Second, ErrAuthorizationPending},
			{10 * time.Second, ErrAuthorizationPending}}, Interval},
		"pending, polled too soon, then at the new interval": {fresh(Pending), []poll{{0, ErrAuthorizationPending},
			{2 * time.Second, ErrSlowDown}, {7 * time.Second, ErrSlowDown}, {22 * time.Second, ErrAuthorizationPending}}, 15 * time.Second},
		"approved, polled early": {fresh(Approved), []poll{{time.Second, nil}}, Interval},
		"denied":                 {fresh(Denied), []poll{{0, ErrAccessDenied}}, Interval},
		"redeemed":               {fresh(Redeemed), []poll{{0, ErrRedeemed}}, Interval},
		"expired, whatever its state": {&Authorization{State: Approved, ExpiresAt: t0, Interval: Interval},
			[]poll{{0, ErrExpiredToken}}, Interval},
	} {
		t.Run(name, func(t *testing.T) {
			for i, p := range c.polls {
				if err := c.auth.Poll(t0.Add(p.after)); !errors.Is(err, p.want) {
					t.Errorf("poll %d at +%s: %v, want %v", i, p.after, err, p.want)
				}
			}
			if c.auth.Interval != c.interval {
				t.Errorf("interval %s, want %s", c.auth.Interval, c.interval)
			}
		})
	}
	unknown := &Authorization{State: "lost", ExpiresAt: t0.Add(Lifetime)}
	if err := unknown.Poll(t0); !errors.Is(err, fosite.ErrServerError) {
		t.Errorf("an unknown state answers %v, want server_error", err)
	}
	// The wire names clients compare.
	for err, want := range map[*fosite.RFC6749Error]string{ErrAuthorizationPending: "authorization_pending", ErrSlowDown: "slow_down",
		ErrExpiredToken: "expired_token", ErrAccessDenied: "access_denied", ErrRedeemed: "invalid_grant"} {
		if err.ErrorField != want || err.CodeField != 400 {
			t.Errorf("%v: error %q, status %d; want %q, 400", err, err.ErrorField, err.CodeField, want)
		}
	}
}
