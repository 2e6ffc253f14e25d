package audit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
)

func event(personal bool, ctx context.Context, f Fields, kv ...any) string {
	var b bytes.Buffer
	l := New(&b, personal)
	l.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 6000, time.FixedZone("x", 3600)) }
	l.Event(ctx, "Session Started", f, kv...)
	return b.String()
}

// The line has Pinniped's keys in Pinniped's order, personal information redacted by default
// with the shape of each value kept.
func TestEventShapeAndRedaction(t *testing.T) {
	ctx := WithID(context.Background(), "the-audit-id")
	f := Fields{SessionID: "s1", PersonalInfo: []any{"username", "alice", "groups", []string{"a", "b"}, "extras", map[string][]string{"k": {"v"}}, "none", []string(nil)}}
	got := event(false, ctx, f, "warnings", []string{}, "err", errors.New("boom"))
	want := `{"level":"info","timestamp":"2026-01-02T02:04:05.000006Z","caller":"audit/audit_test.go:18$audit.event",` +
		`"message":"Session Started","auditEvent":true,"auditID":"the-audit-id","sessionID":"s1",` +
		`"personalInfo":{"username":"redacted","groups":["redacted 2 values"],"extras":{"redacted":"redacted 1 keys"},"none":["redacted 0 values"]},` +
		`"warnings":[],"err":"boom"}` + "\n"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// Enabled, personal information is written as is, nil collections as empty ones.
func TestEventPersonalInfoEnabled(t *testing.T) {
	got := event(true, context.Background(), Fields{PersonalInfo: []any{"username", "alice", "groups", []string(nil), "extras", map[string]string(nil)}})
	if !strings.Contains(got, `"personalInfo":{"username":"alice","groups":[],"extras":{}}`) || strings.Contains(got, "auditID") || strings.Contains(got, "sessionID") {
		t.Fatalf("got %s", got)
	}
}

// A token is named by its HMAC-SHA256 under the installation's key (RFC 4231's first test case),
// never by its plain SHA-256, which would let anyone who reads the logs test guesses.
func TestTokenID(t *testing.T) {
	key := bytes.Repeat([]byte{0x0b}, 20)
	l := New(io.Discard, false).WithTokenFingerprintKey(key)
	if got := l.TokenID("Hi There"); got != "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" {
		t.Fatalf("TokenID(Hi There) = %s", got)
	}
	if l.TokenID("Hi There") != New(io.Discard, true).WithTokenFingerprintKey(key).TokenID("Hi There") {
		t.Error("two loggers with one key (two replicas) name a token differently")
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(New(io.Discard, false).TokenID("abc")) {
		t.Error("a logger without the installation's key names tokens in another shape")
	}
	if New(io.Discard, false).TokenID("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Error("a logger without the installation's key names a token by its plain SHA-256")
	}
	if New(io.Discard, false).TokenID("abc") == New(io.Discard, false).TokenID("abc") {
		t.Error("two loggers without the installation's key share one")
	}
	var none *Logger
	if none.TokenID("abc") != "" {
		t.Error("a nil Logger names tokens")
	}
}

func TestSettingValidate(t *testing.T) {
	for _, s := range []Setting{"", Enabled, Disabled} {
		if err := s.Validate("audit.x"); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	err := Setting("yes").Validate("audit.logUsernamesAndGroups")
	if err == nil || err.Error() != `audit.logUsernamesAndGroups: must be "enabled", "disabled" or empty (the same as "disabled"), got "yes"` {
		t.Fatalf("got %v", err)
	}
	if !Enabled.Enabled() || Disabled.Enabled() || Setting("").Enabled() {
		t.Fatal("Enabled")
	}
}
