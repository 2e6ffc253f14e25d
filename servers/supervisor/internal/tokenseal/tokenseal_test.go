package tokenseal

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// ring returns a ready ring at now with a key created at each of created.
func ring(t *testing.T, now time.Time, created ...time.Time) (*Ring, map[string][]byte) {
	t.Helper()
	data := map[string][]byte{}
	for _, c := range created {
		data[KeyName(c)] = NewKeyMaterial()
	}
	keys, err := ParseKeys(data)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRing()
	r.now = func() time.Time { return now }
	r.Set(keys)
	return r, data
}

func TestSealOpen(t *testing.T) {
	r, _ := ring(t, t0, t0.Add(-time.Hour))
	sealed, err := r.Seal("upstream-refresh-token", "request-1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "upstream-refresh-token") || !strings.HasPrefix(sealed, "sealed:v1:") {
		t.Fatalf("sealed value %q", sealed)
	}
	again, _ := r.Seal("upstream-refresh-token", "request-1")
	if again == sealed {
		t.Error("two seals of one token are equal: the nonce is not random")
	}
	if got, err := r.Open(sealed, "request-1"); err != nil || got != "upstream-refresh-token" {
		t.Errorf("Open = %q, %v", got, err)
	}
	if _, err := r.Open(sealed, "request-2"); !errors.Is(err, ErrCannotOpen) {
		t.Errorf("opened with another login's request ID: %v", err)
	}
	tampered := sealed[:len(sealed)-2] + "AA"
	if _, err := r.Open(tampered, "request-1"); !errors.Is(err, ErrCannotOpen) {
		t.Errorf("opened a changed value: %v", err)
	}
	if got, err := r.Seal("", "request-1"); err != nil || got != "" {
		t.Errorf("Seal of no token = %q, %v", got, err)
	}
}

// Sessions stored before sealing existed hold plain tokens, which stay readable.
func TestOpenPlain(t *testing.T) {
	r, _ := ring(t, t0, t0)
	if got, err := r.Open("gho_plain", "request-1"); err != nil || got != "gho_plain" {
		t.Errorf("Open(plain) = %q, %v", got, err)
	}
}

func TestNotReady(t *testing.T) {
	r := NewRing()
	if _, err := r.Seal("token", "id"); !errors.Is(err, ErrNotReady) {
		t.Errorf("Seal on an empty ring: %v", err)
	}
	if _, err := r.Open("sealed:v1:1:AAAA", "id"); !errors.Is(err, ErrNotReady) {
		t.Errorf("Open on an empty ring: %v", err)
	}
	select {
	case <-r.Ready():
		t.Fatal("an empty ring is ready")
	default:
	}
	r.Set([]Key{})
	select {
	case <-r.Ready():
		t.Fatal("a ring set with no keys is ready")
	default:
	}
	keys, _ := ParseKeys(map[string][]byte{KeyName(t0): NewKeyMaterial()})
	r.Set(keys)
	<-r.Ready()
}

// A rotation: the new key seals only from KeyActivation on, and what the old key sealed opens
// while the old key is in the ring, and no longer once it is retired.
func TestRotation(t *testing.T) {
	oldKey, newKey := t0.Add(-30*24*time.Hour), t0
	r, data := ring(t, t0.Add(KeyActivation/2), oldKey, newKey)
	sealedOld, _ := r.Seal("token", "id")
	if id := strings.Split(sealedOld, ":")[2]; id != KeyName(oldKey)[len("key-"):] {
		t.Errorf("a key younger than KeyActivation sealed (key %s)", id)
	}
	r.now = func() time.Time { return t0.Add(KeyActivation) }
	sealedNew, _ := r.Seal("token", "id")
	if id := strings.Split(sealedNew, ":")[2]; id != KeyName(newKey)[len("key-"):] {
		t.Errorf("the activated key does not seal (key %s)", id)
	}
	for _, s := range []string{sealedOld, sealedNew} {
		if got, err := r.Open(s, "id"); err != nil || got != "token" {
			t.Errorf("Open(%q) = %q, %v", s, got, err)
		}
	}
	r.Set(nil) // a Secret emptied by hand: the ring keeps its keys until new ones come
	if got, err := r.Open(sealedOld, "id"); err != nil || got != "token" {
		t.Errorf("after an empty Set, Open = %q, %v", got, err)
	}
	delete(data, KeyName(oldKey))
	keys, _ := ParseKeys(data)
	r.Set(keys)
	if _, err := r.Open(sealedOld, "id"); !errors.Is(err, ErrCannotOpen) {
		t.Errorf("opened with a retired key: %v", err)
	}
}

func TestParseKeys(t *testing.T) {
	keys, err := ParseKeys(map[string][]byte{
		KeyName(t0):                 NewKeyMaterial(),
		KeyName(t0.Add(-time.Hour)): NewKeyMaterial(),
		"key-abc":                   NewKeyMaterial(),
		"notes":                     []byte("x"),
		KeyName(t0.Add(time.Hour)):  []byte("short"),
	})
	if len(keys) != 2 || !keys[0].Created.Before(keys[1].Created) {
		t.Errorf("keys %v, want the two valid ones oldest first", keys)
	}
	for _, want := range []string{`"key-abc" is not a key name`, `"notes" is not a key name`, "has 5 bytes"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %s", err, want)
		}
	}
}
