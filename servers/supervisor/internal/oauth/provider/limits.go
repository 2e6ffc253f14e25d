package provider

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxRequestBody caps the body of requests to the authorize, token and login endpoints: their
// forms are a few kilobytes at most, and without a cap a client could make the Supervisor
// buffer up to net/http's 10 MB form limit per request.
const maxRequestBody = 1 << 20

// LimitBody refuses request bodies larger than maxRequestBody: reading more fails, which the
// form parsers of the handlers report as a bad request.
func LimitBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)
		h.ServeHTTP(w, r)
	})
}

// StrictForm refuses authorize and token requests whose form does not parse, or whose body is
// larger than maxRequestBody, with invalid_request. fosite would go on with whatever part of the
// form parsed: net/http's ParseMultipartForm drops ParseForm's error for non-multipart bodies.
func StrictForm(h http.Handler) http.Handler {
	return LimitBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			desc := "The request is not a well-formed form."
			if tooLarge := new(http.MaxBytesError); errors.As(err, &tooLarge) {
				desc = "The request body is too large."
			}
			w.Header().Set("Content-Type", "application/json;charset=UTF-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_request", "error_description": desc})
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// Password attempts per user: a burst of 10, then one every 6 seconds (10 a minute). A person
// mistyping a password a few times never notices; a CLI in a script logs in far less often,
// since it caches its session; someone guessing passwords gets 600 guesses an hour per user
// instead of as many as the upstream server answers, and no lockout policy of the upstream
// (Active Directory's, say) is tripped by the Supervisor before that.
const (
	loginBurst    = 10
	loginInterval = 6 * time.Second
	// maxLoginLimiters bounds a limiter's memory (about 200 bytes a key). When it is reached,
	// the keys idle for long enough that their bucket refilled are forgotten.
	maxLoginLimiters = 10000
)

// Entries of user codes at a device verification page, per source address: a burst of 10, then
// one every 6 seconds. A person mistyping a code a few times never notices; someone guessing
// codes from one address gets 600 guesses an hour against a space of 20^8 (2.6e10) codes.
const (
	deviceCodeBurst    = 10
	deviceCodeInterval = 6 * time.Second
)

// Device authorizations started per source address: a burst of 30, then one every 2 seconds. Each
// one stores a record until it expires (about 1 KiB for 20 minutes); a person starts one per
// login, and a farm of CI runners behind one address 30 a minute, while a flood from one address
// stores at most 600 records at a time instead of filling etcd.
const (
	deviceStartBurst    = 30
	deviceStartInterval = 2 * time.Second
)

// AttemptLimiter limits attempts per key (a user, a source) with a token bucket each: password
// attempts per user of an identity provider, across the FederationDomains that use it, and user
// code entries per source. Every attempt costs a token, successful ones too: refunding them
// would let parallel guesses pass before the failures count.
type AttemptLimiter struct {
	now   func() time.Time
	every time.Duration
	burst int

	mu   sync.Mutex
	keys map[string]*rate.Limiter
}

// NewLoginLimiter returns the limiter of password attempts, which reads the time from now.
func NewLoginLimiter(now func() time.Time) *AttemptLimiter {
	return &AttemptLimiter{now: now, every: loginInterval, burst: loginBurst, keys: map[string]*rate.Limiter{}}
}

// NewDeviceCodeLimiter returns the limiter of user code entries, which reads the time from now.
func NewDeviceCodeLimiter(now func() time.Time) *AttemptLimiter {
	return &AttemptLimiter{now: now, every: deviceCodeInterval, burst: deviceCodeBurst, keys: map[string]*rate.Limiter{}}
}

// NewDeviceStartLimiter returns the limiter of device authorizations started, which reads the
// time from now.
func NewDeviceStartLimiter(now func() time.Time) *AttemptLimiter {
	return &AttemptLimiter{now: now, every: deviceStartInterval, burst: deviceStartBurst, keys: map[string]*rate.Limiter{}}
}

// loginKey is the key of username's password attempts at the identity provider idp. Usernames
// are compared the way LDAP and most identity providers compare them: case-insensitively and
// without surrounding spaces.
func loginKey(idp, username string) string {
	return idp + "\x00" + strings.ToLower(strings.TrimSpace(username))
}

// allow reports whether an attempt of key may go on, and counts it.
func (l *AttemptLimiter) allow(key string) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.keys[key]
	if !ok {
		if len(l.keys) >= maxLoginLimiters {
			l.evict(now)
		}
		lim = rate.NewLimiter(rate.Every(l.every), l.burst)
		l.keys[key] = lim
	}
	return lim.AllowN(now, 1)
}

// evict forgets the keys whose bucket has refilled: a full bucket is the same as a new one, so
// nothing is lost. When every key is mid-burst (someone is spraying usernames), one arbitrary
// key is forgotten instead, so that the attacker cannot lock new users out.
func (l *AttemptLimiter) evict(now time.Time) {
	for key, lim := range l.keys {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.keys, key)
		}
	}
	if len(l.keys) < maxLoginLimiters {
		return
	}
	for key := range l.keys {
		delete(l.keys, key)
		return
	}
}
