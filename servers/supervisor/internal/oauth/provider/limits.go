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
	// maxLoginLimiters bounds the limiter's memory (about 200 bytes a user). When it is
	// reached, the users idle for long enough that their bucket refilled are forgotten.
	maxLoginLimiters = 10000
)

// LoginLimiter limits password attempts per user of an identity provider, across the
// FederationDomains that use it. Every attempt costs a token, successful ones too: refunding
// them would let parallel guesses pass before the failures count.
type LoginLimiter struct {
	now func() time.Time

	mu    sync.Mutex
	users map[string]*rate.Limiter
}

// NewLoginLimiter returns a limiter that reads the time from now.
func NewLoginLimiter(now func() time.Time) *LoginLimiter {
	return &LoginLimiter{now: now, users: map[string]*rate.Limiter{}}
}

// allow reports whether a password attempt for username at the identity provider idp may go
// to the upstream, and counts it. Usernames are compared the way LDAP and most identity
// providers compare them: case-insensitively and without surrounding spaces.
func (l *LoginLimiter) allow(idp, username string) bool {
	key := idp + "\x00" + strings.ToLower(strings.TrimSpace(username))
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.users[key]
	if !ok {
		if len(l.users) >= maxLoginLimiters {
			l.evict(now)
		}
		lim = rate.NewLimiter(rate.Every(loginInterval), loginBurst)
		l.users[key] = lim
	}
	return lim.AllowN(now, 1)
}

// evict forgets the users whose bucket has refilled: a full bucket is the same as a new one, so
// nothing is lost. When every user is mid-burst (someone is spraying usernames), one arbitrary
// user is forgotten instead, so that the attacker cannot lock new users out.
func (l *LoginLimiter) evict(now time.Time) {
	for key, lim := range l.users {
		if lim.TokensAt(now) >= loginBurst {
			delete(l.users, key)
		}
	}
	if len(l.users) < maxLoginLimiters {
		return
	}
	for key := range l.users {
		delete(l.users, key)
		return
	}
}
