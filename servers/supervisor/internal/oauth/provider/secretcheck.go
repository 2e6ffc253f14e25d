package provider

import (
	"context"
	"crypto/sha256"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/ory/fosite"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/time/rate"
)

// Client secrets are bcrypt hashes, and comparing one costs tens of milliseconds of CPU by
// design: without care, anyone who can reach the token endpoint could keep the Supervisor's CPUs
// busy with made-up secrets. SecretChecker compares them with three bounds:
//   - a successful comparison is remembered for verifiedFor after its last use, so a client that
//     authenticates at every request pays for bcrypt about once, and is let in even from a source
//     ClientFailures blocks (the cache key is a digest of the hash and the secret: a hash removed
//     from the client is never consulted again, so a revoked secret stops working at once);
//   - at most one comparison per CPU runs at a time; the others wait, or give up with their request;
//   - failures are limited per client and source (ClientFailures, counted by the token endpoint):
//     a blocked source gets no new comparison (WithoutNewComparisons) but keeps what was verified.
//
// Client secrets are 256 random bits (OIDCClientSecretRequest), far beyond guessing: the failure
// limit bounds the CPU an attacker can spend, and a stranger tripping it blocks only itself.
const (
	verifiedFor = 24 * time.Hour
	// maxVerified bounds the cache (about 100 bytes an entry).
	maxVerified = 10000
)

// SecretChecker is the fosite.Hasher of client secrets, shared by every issuer.
type SecretChecker struct {
	now   func() time.Time
	slots chan struct{}
	// compare is bcrypt's comparison (tests count its calls).
	compare func(hash, data []byte) error

	mu       sync.Mutex
	verified map[[sha256.Size]byte]time.Time
}

var _ fosite.Hasher = (*SecretChecker)(nil)

// NewSecretChecker returns a checker that reads the time from now.
func NewSecretChecker(now func() time.Time) *SecretChecker {
	return &SecretChecker{
		now: now, slots: make(chan struct{}, runtime.GOMAXPROCS(0)), compare: bcrypt.CompareHashAndPassword,
		verified: map[[sha256.Size]byte]time.Time{},
	}
}

// ErrComparisonRefused is Compare's answer, without a comparison, to a request
// WithoutNewComparisons for a secret it has not verified.
var ErrComparisonRefused = errors.New("too many failed client authentications from this source")

type noNewComparisonsKey struct{}

// WithoutNewComparisons marks ctx so that Compare only accepts secrets it verified before: the
// request comes from a source that failed too often.
func WithoutNewComparisons(ctx context.Context) context.Context {
	return context.WithValue(ctx, noNewComparisonsKey{}, true)
}

// Compare reports whether data is the secret whose bcrypt hash is hash.
func (c *SecretChecker) Compare(ctx context.Context, hash, data []byte) error {
	key := sha256.Sum256(append(append(append([]byte{}, hash...), 0), data...))
	now := c.now()
	c.mu.Lock()
	until, ok := c.verified[key]
	if ok && now.Before(until) {
		c.verified[key] = now.Add(verifiedFor)
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	if refused, _ := ctx.Value(noNewComparisonsKey{}).(bool); refused {
		return ErrComparisonRefused
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := c.compare(hash, data)
	<-c.slots
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.verified) >= maxVerified {
		c.evict(now)
	}
	c.verified[key] = now.Add(verifiedFor)
	return nil
}

// evict drops the expired entries, or all of them when none has expired.
func (c *SecretChecker) evict(now time.Time) {
	for k, until := range c.verified {
		if !now.Before(until) {
			delete(c.verified, k)
		}
	}
	if len(c.verified) >= maxVerified {
		clear(c.verified)
	}
}

// Hash is not used: the Supervisor hashes client secrets in the OIDCClientSecretRequest API.
func (c *SecretChecker) Hash(context.Context, []byte) ([]byte, error) {
	return nil, errors.New("client secrets are hashed by the OIDCClientSecretRequest API")
}

// Failed client authentications per client and source: a burst of 10, then one every 6 seconds.
// A source that used them up gets no new secret comparison; one guessing secrets gets 600 guesses
// an hour, and each refused attempt costs no bcrypt comparison.
const (
	clientFailureBurst    = 10
	clientFailureInterval = 6 * time.Second
	maxClientLimiters     = 10000
)

// ClientFailures counts failed client authentications per client ID and source address
// (clientaddr.Source): failures from one source never block the client elsewhere.
type ClientFailures struct {
	now func() time.Time

	mu      sync.Mutex
	clients map[clientSource]*rate.Limiter
}

type clientSource struct{ client, source string }

// NewClientFailures returns a counter that reads the time from now.
func NewClientFailures(now func() time.Time) *ClientFailures {
	return &ClientFailures{now: now, clients: map[clientSource]*rate.Limiter{}}
}

// Blocked reports whether client has used up its failures from source: its next attempt from
// there gets no new secret comparison (WithoutNewComparisons).
func (f *ClientFailures) Blocked(client, source string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	lim, ok := f.clients[clientSource{client, source}]
	return ok && lim.TokensAt(f.now()) < 1
}

// Failed counts a failed authentication of client from source.
func (f *ClientFailures) Failed(client, source string) {
	now := f.now()
	key := clientSource{client, source}
	f.mu.Lock()
	defer f.mu.Unlock()
	lim, ok := f.clients[key]
	if !ok {
		if len(f.clients) >= maxClientLimiters {
			for k, l := range f.clients {
				if l.TokensAt(now) >= clientFailureBurst {
					delete(f.clients, k)
				}
			}
			if len(f.clients) >= maxClientLimiters {
				clear(f.clients)
			}
		}
		lim = rate.NewLimiter(rate.Every(clientFailureInterval), clientFailureBurst)
		f.clients[key] = lim
	}
	lim.AllowN(now, 1)
}
