// Package tokenseal encrypts the upstream tokens that stored login sessions hold (an OIDC
// provider's refresh token, a GitHub access token) with AES-256-GCM, so that whoever can read the
// Supervisor's Secrets cannot use them at the upstream without also reading the key Secret.
//
// Keys form a ring. Every key opens what it sealed; the newest key that every replica has had
// time to learn seals. A rotation therefore adds a key, which seals only from KeyActivation
// after its creation, and retires the old one once nothing it sealed can still be stored.
package tokenseal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// KeyActivation is how long a new key waits before it seals: the time every replica has to see
// it in the key Secret, so that none meets a token sealed with a key it does not know yet.
const KeyActivation = time.Minute

// KeySize is the size of a key: AES-256.
const KeySize = 32

// prefix starts every sealed value: "sealed:v1:<key ID>:<base64url(nonce | ciphertext)>".
// Values without it were stored before sealing existed and are read as they are.
const prefix = "sealed:v1:"

var (
	// ErrNotReady is the error of a ring that has no keys yet: the key controller has not
	// synced. It is temporary.
	ErrNotReady = errors.New("the keys that seal upstream tokens are not loaded yet")
	// ErrCannotOpen is the error of a sealed value that no key of the ring opens: its key was
	// retired, or the value was changed. The session it belongs to cannot be used any more.
	ErrCannotOpen = errors.New("a sealed upstream token cannot be opened with any current key")
)

// Key is one key of the ring. Its ID is its creation time in Unix seconds, which is also how it
// is named in the key Secret (KeyName).
type Key struct {
	ID      string
	Created time.Time
	aead    cipher.AEAD
}

// KeyName is the key Secret's data key of a key created at created.
func KeyName(created time.Time) string { return "key-" + strconv.FormatInt(created.Unix(), 10) }

// NewKeyMaterial returns the bytes of a new random key.
func NewKeyMaterial() []byte {
	b := make([]byte, KeySize)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics where no randomness exists)
	return b
}

// ParseKeys reads the keys of a key Secret's data, oldest first. Entries that are not a key
// (a name other than key-<seconds>, or not KeySize bytes) are reported in the error, and the
// valid keys are returned all the same.
func ParseKeys(data map[string][]byte) ([]Key, error) {
	var keys []Key
	var errs []error
	for name, material := range data {
		secs, err := strconv.ParseInt(strings.TrimPrefix(name, "key-"), 10, 64)
		if !strings.HasPrefix(name, "key-") || err != nil || secs <= 0 {
			errs = append(errs, fmt.Errorf("%q is not a key name (key-<Unix seconds>)", name))
			continue
		}
		if len(material) != KeySize {
			errs = append(errs, fmt.Errorf("key %q has %d bytes, not %d", name, len(material), KeySize))
			continue
		}
		block, err := aes.NewCipher(material)
		if err != nil {
			errs = append(errs, fmt.Errorf("key %q: %w", name, err))
			continue
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			errs = append(errs, fmt.Errorf("key %q: %w", name, err))
			continue
		}
		keys = append(keys, Key{ID: strconv.FormatInt(secs, 10), Created: time.Unix(secs, 0), aead: aead})
	}
	slices.SortFunc(keys, func(a, b Key) int { return a.Created.Compare(b.Created) })
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return keys, errors.Join(errs...)
}

// Ring holds the current keys; it is safe for concurrent use.
type Ring struct {
	mu    sync.RWMutex
	keys  []Key // oldest first
	ready chan struct{}
	once  sync.Once
	// now is time.Now unless a test sets it.
	now func() time.Time
}

// NewRing returns an empty ring: it seals and opens nothing until Set gives it keys.
func NewRing() *Ring { return &Ring{ready: make(chan struct{}), now: time.Now} }

// Set replaces the ring's keys. A Set without keys is ignored: the ring keeps the keys it had
// rather than lose every session (a key Secret emptied by hand gets a new key at once). A ring is
// ready from its first Set.
func (r *Ring) Set(keys []Key) {
	if len(keys) == 0 {
		return
	}
	r.mu.Lock()
	r.keys = slices.Clone(keys)
	r.mu.Unlock()
	r.once.Do(func() { close(r.ready) })
}

// Ready is closed once the ring has keys.
func (r *Ring) Ready() <-chan struct{} { return r.ready }

// sealing is the key that seals: the newest that is KeyActivation old, or the oldest key when
// none is (a ring just created has only keys younger than that).
func (r *Ring) sealing() (Key, bool) {
	if len(r.keys) == 0 {
		return Key{}, false
	}
	now := r.now()
	for i := len(r.keys) - 1; i >= 0; i-- {
		if !now.Before(r.keys[i].Created.Add(KeyActivation)) {
			return r.keys[i], true
		}
	}
	return r.keys[0], true
}

// Seal encrypts token, bound to aad (the login's request ID: a sealed token moved into another
// login does not open). An empty token stays empty.
func (r *Ring) Seal(token, aad string) (string, error) {
	if token == "" {
		return "", nil
	}
	r.mu.RLock()
	key, ok := r.sealing()
	r.mu.RUnlock()
	if !ok {
		return "", ErrNotReady
	}
	nonce := make([]byte, key.aead.NonceSize())
	_, _ = rand.Read(nonce)
	sealed := key.aead.Seal(nonce, nonce, []byte(token), []byte(aad))
	return prefix + key.ID + ":" + base64.RawURLEncoding.EncodeToString(sealed), nil
}

// Open decrypts what Seal returned for the same aad. A value that is not sealed (stored before
// tokens were sealed) is returned as it is.
func (r *Ring) Open(value, aad string) (string, error) {
	rest, sealed := strings.CutPrefix(value, prefix)
	if !sealed {
		return value, nil
	}
	id, encoded, ok := strings.Cut(rest, ":")
	raw, err := base64.RawURLEncoding.DecodeString(encoded)
	if !ok || err != nil {
		return "", fmt.Errorf("%w: it is malformed", ErrCannotOpen)
	}
	r.mu.RLock()
	keys := r.keys
	r.mu.RUnlock()
	if len(keys) == 0 {
		return "", ErrNotReady
	}
	i := slices.IndexFunc(keys, func(k Key) bool { return k.ID == id })
	if i < 0 {
		return "", fmt.Errorf("%w: its key %s is not in the ring", ErrCannotOpen, id)
	}
	aead := keys[i].aead
	if len(raw) < aead.NonceSize() {
		return "", fmt.Errorf("%w: it is malformed", ErrCannotOpen)
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(aad))
	if err != nil {
		return "", fmt.Errorf("%w: it does not authenticate with key %s", ErrCannotOpen, id)
	}
	return string(plain), nil
}
