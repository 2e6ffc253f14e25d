package connectors

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestProbe(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewProbeCache(func() time.Time { return now })
	probes := 0
	// result counts the probes; ok says whether this one succeeds.
	run := func(fingerprint string, ok bool) (result int, prev int, found bool) {
		result = Probe(c, fingerprint, func(p int, f bool) (int, bool) {
			probes++
			prev, found = p, f
			return probes, ok
		})
		return result, prev, found
	}

	if r, _, found := run("a", false); r != 1 || found {
		t.Errorf("first probe = %d, found %v; want 1, nothing found", r, found)
	}
	if r, _, _ := run("a", true); r != 2 {
		t.Errorf("a failure is not remembered: got %d, want a second probe", r)
	}
	if r, _, _ := run("a", false); r != 2 || probes != 2 {
		t.Errorf("a fresh success = %d after %d probes, want the remembered 2 without probing", r, probes)
	}
	if r, _, found := run("b", true); r != 3 || found {
		t.Errorf("other inputs = %d, found %v; want a new probe that finds nothing", r, found)
	}
	now = now.Add(ProbeTTL)
	if r, prev, found := run("b", false); r != 4 || !found || prev != 3 {
		t.Errorf("a stale success = %d (prev %d, found %v), want a new probe handed the stale 3", r, prev, found)
	}
	if r, prev, found := run("b", true); r != 5 || !found || prev != 3 {
		t.Errorf("after a failed re-probe = %d (prev %d, found %v), want another probe handed 3", r, prev, found)
	}
}

func TestProbeExpire(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewProbeCache(func() time.Time { return now })
	probes := 0
	run := func(ok bool) (prev int, found bool) {
		Probe(c, "a", func(p int, f bool) (int, bool) {
			probes++
			prev, found = p, f
			return probes, ok
		})
		return prev, found
	}
	if c.Expire() {
		t.Error("an empty cache expired something")
	}
	run(true)
	if !c.Expire() {
		t.Error("a fresh success did not expire")
	}
	if c.Expire() {
		t.Error("an expired success expired again")
	}
	if prev, found := run(false); probes != 2 || !found || prev != 1 {
		t.Errorf("after Expire: %d probes, handed %d (found %v); want a second probe handed the expired 1", probes, prev, found)
	}
	if c.Expire() {
		t.Error("a failed probe left something to expire: reports would probe a down upstream at every request")
	}
	run(false)
	if probes != 3 {
		t.Errorf("after a failed probe: %d probes, want another", probes)
	}
	run(true)
	run(true)
	if probes != 4 || !c.Expire() {
		t.Errorf("after a new success: %d probes, want it remembered (4) and expirable", probes)
	}
	now = now.Add(ProbeTTL)
	run(true)
	now = now.Add(ProbeTTL)
	if c.Expire() {
		t.Error("a success older than ProbeTTL expired: the next sync probes anyway")
	}
}

func TestProbeFreshFor(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewProbeCache(func() time.Time { return now })
	run := func(ok bool) { Probe(c, "a", func(int, bool) (int, bool) { return 1, ok }) }
	if _, ok := c.FreshFor(); ok {
		t.Error("an empty cache has a fresh success")
	}
	run(false)
	if _, ok := c.FreshFor(); ok {
		t.Error("a failed probe left a fresh success")
	}
	run(true)
	now = now.Add(ProbeTTL / 4)
	if left, ok := c.FreshFor(); !ok || left != ProbeTTL*3/4 {
		t.Errorf("a quarter of ProbeTTL after a success: fresh for %v (%v), want %v", left, ok, ProbeTTL*3/4)
	}
	c.Expire()
	if _, ok := c.FreshFor(); ok {
		t.Error("an expired success is fresh")
	}
	run(true)
	now = now.Add(ProbeTTL)
	if _, ok := c.FreshFor(); ok {
		t.Error("a success ProbeTTL old is fresh")
	}
}

func TestFingerprint(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}}
	base := Fingerprint(1, secret, []byte("ca"))
	for name, other := range map[string]string{
		"generation": Fingerprint(2, secret, []byte("ca")),
		"secret":     Fingerprint(1, nil, []byte("ca")),
		"CA bundle":  Fingerprint(1, secret, nil),
	} {
		if other == base {
			t.Errorf("a changed %s keeps the fingerprint %s", name, base)
		}
	}
	if again := Fingerprint(1, secret.DeepCopy(), []byte("ca")); again != base {
		t.Errorf("the same inputs give %s and %s", base, again)
	}
}

// After SucceededBefore, failing probes of its fingerprint are handed found with a zero prev until
// one succeeds; from then on the cache is as any other, and Succeeded tells the fingerprint.
func TestProbeSucceededBefore(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewProbeCache(func() time.Time { return now })
	c.SucceededBefore("a")
	run := func(fingerprint string, ok bool, result int) (prev int, found bool) {
		Probe(c, fingerprint, func(p int, f bool) (int, bool) {
			prev, found = p, f
			return result, ok
		})
		return prev, found
	}
	if _, found := run("other", false, 1); found {
		t.Error("a probe of other inputs than those that succeeded before found a success")
	}
	if _, ok := c.Succeeded(); ok {
		t.Error("Succeeded before any success here")
	}
	for range 2 {
		if prev, found := run("a", false, 1); !found || prev != 0 {
			t.Errorf("a failing probe after SucceededBefore: prev %d, found %v; want found with a zero prev", prev, found)
		}
	}
	run("a", true, 2)
	if fp, ok := c.Succeeded(); !ok || fp != "a" {
		t.Errorf("Succeeded = %q, %v; want a", fp, ok)
	}
	if _, found := run("b", false, 3); found {
		t.Error("other inputs found a success: once a probe succeeded here, SucceededBefore no longer counts")
	}
}
