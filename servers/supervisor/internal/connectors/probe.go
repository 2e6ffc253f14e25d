package connectors

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ProbeTTL is how long a successful probe stands for its inputs before it is repeated.
const ProbeTTL = 15 * time.Minute

// ProbeCache remembers the last successful probe of one object with the fingerprint of what it
// depended on, so that resyncs do not reach the upstream again for unchanged inputs. Failures are
// not remembered: they are probed again at every sync. A cache serves one object, synced by one
// goroutine at a time.
type ProbeCache struct {
	now         func() time.Time
	fingerprint string
	at          time.Time
	result      any
}

// NewProbeCache returns an empty cache on the clock now.
func NewProbeCache(now func() time.Time) *ProbeCache { return &ProbeCache{now: now} }

// Probe returns the result remembered under fingerprint while it is younger than ProbeTTL.
// Otherwise it runs probe, handing it the last successful result of the same fingerprint however
// old (found is false when there is none), and remembers the result when probe reports success.
func Probe[T any](c *ProbeCache, fingerprint string, probe func(prev T, found bool) (result T, ok bool)) T {
	now := c.now()
	prev, found := c.result.(T)
	found = found && c.fingerprint == fingerprint
	if found && now.Sub(c.at) < ProbeTTL {
		return prev
	}
	result, ok := probe(prev, found)
	if ok {
		c.fingerprint, c.at, c.result = fingerprint, now, result
	}
	return result
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
