package connectors

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ProbeTTL is how long a successful probe stands for its inputs before it is repeated, unless a
// login or refresh finds the upstream unreachable first (Expire). It is short because only the
// leading replica writes status, and the logins that find an upstream gone may all reach the
// other one: the leader's own probes, made as each success goes stale (FreshFor), show an outage
// within ProbeTTL however the requests are spread. A probe is one discovery read, bind or TLS
// dial, so this is little load.
const ProbeTTL = time.Minute

// ProbeCache remembers the last successful probe of one object with the fingerprint of what it
// depended on, so that resyncs do not reach the upstream again for unchanged inputs. Failures are
// not remembered: they are probed again at every sync. A cache serves one object, probed by one
// goroutine at a time; Expire may be called from any.
type ProbeCache struct {
	now         func() time.Time
	mu          sync.Mutex
	fingerprint string
	at          time.Time
	expired     bool
	result      any
	// before is the fingerprint SucceededBefore was given.
	before string
}

// NewProbeCache returns an empty cache on the clock now.
func NewProbeCache(now func() time.Time) *ProbeCache { return &ProbeCache{now: now} }

// SucceededBefore tells the cache that a probe of inputs of this fingerprint succeeded before the
// cache was made, in an earlier process of the Supervisor. Until a probe succeeds here, Probe
// hands a probe of that fingerprint found = true with a zero prev, so that an upstream that is
// down when the Supervisor restarts keeps a connector (built from the same inputs) and its users
// wait for it instead of logging in again.
func (c *ProbeCache) SucceededBefore(fingerprint string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.before = fingerprint
}

// Succeeded returns the fingerprint of the remembered success, if any.
func (c *ProbeCache) Succeeded() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fingerprint, c.result != nil
}

// Probe returns the result remembered under fingerprint while it is younger than ProbeTTL and not
// expired. Otherwise it runs probe, handing it the last successful result of the same fingerprint
// however old (found is false when there is none, unless SucceededBefore named fingerprint,
// with a zero prev), and remembers the result when probe reports success. A factory whose probe failed only
// because the upstream could not be reached keeps serving with that last result (see Factory).
func Probe[T any](c *ProbeCache, fingerprint string, probe func(prev T, found bool) (result T, ok bool)) T {
	c.mu.Lock()
	now := c.now()
	prev, found := c.result.(T)
	found = found && c.fingerprint == fingerprint
	if c.result == nil && c.before != "" && c.before == fingerprint {
		found = true
	}
	fresh := found && !c.expired && now.Sub(c.at) < ProbeTTL
	c.mu.Unlock()
	if fresh {
		return prev
	}
	result, ok := probe(prev, found)
	if ok {
		c.mu.Lock()
		c.fingerprint, c.at, c.expired, c.result = fingerprint, now, false, result
		c.mu.Unlock()
	}
	return result
}

// FreshFor returns how long the remembered success stays fresh, after which the next Probe probes
// again; false when none is fresh (none, expired, or stale already).
func (c *ProbeCache) FreshFor() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.result == nil || c.expired {
		return 0, false
	}
	left := ProbeTTL - c.now().Sub(c.at)
	return left, left > 0
}

// Expire makes the remembered success stale, so that the next Probe probes again (and is still
// handed it). It reports whether there was a fresh success to expire: after a failed probe there
// is none until one succeeds, so that reports of an upstream that is down cause no more probes
// than the resyncs do.
func (c *ProbeCache) Expire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.result == nil || c.expired || c.now().Sub(c.at) >= ProbeTTL {
		return false
	}
	c.expired = true
	return true
}

// Fingerprint identifies what a probe depends on: the spec (by generation), the Secret (by
// resourceVersion, nil for none) and the CA bundle.
func Fingerprint(generation int64, secret *corev1.Secret, caBundle []byte) string {
	rv := "none"
	if secret != nil {
		rv = secret.ResourceVersion
	}
	sum := sha256.Sum256(caBundle)
	return fmt.Sprintf("%d/%s/%s", generation, rv, hex.EncodeToString(sum[:]))
}
