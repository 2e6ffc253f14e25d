package impersonator

import (
	"crypto/sha256"
	"crypto/x509"
	"maps"
	"net/http"
	"slices"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/lru"
)

// Verifying a client certificate's chain is one ECDSA or RSA signature check per link, about
// 120 µs for a P-256 certificate: the largest single cost of a request through the proxy, paid
// again on every request of a connection although its certificates cannot change. The answer
// depends only on the chain, the CA pool and the time, so it is remembered for a while.
const (
	// CertificateCacheTTL bounds how long a verified chain is trusted without checking again; the
	// certificates' own expiry bounds it further.
	CertificateCacheTTL = time.Minute
	// CertificateCacheSize is how many chains are remembered, a few KiB each: more than the
	// clients a replica serves at once (the proxy's certificates last minutes, one per user).
	CertificateCacheSize = 4096
)

// cachedCertificateAuthenticator authenticates client certificates as the apiserver's x509
// authenticator does and remembers its successes per (CA pool, chain). Only successes are kept:
// a failure is an error the client sees and must not become cheaper to provoke than to fix, and
// an attacker sending new chains only evicts entries that cost one verification to restore.
type cachedCertificateAuthenticator struct {
	verifyOptions x509request.VerifyOptionFunc
	verify        authenticator.Request
	cache         *lru.Cache
	now           func() time.Time
}

type certificateCacheKey struct {
	// roots identifies the CA content the chain was verified against: a CA provider builds a
	// new pool when its bundle changes, so a rotation never reuses an answer of the old CA.
	roots *x509.CertPool
	chain [sha256.Size]byte
}

type certificateCacheEntry struct {
	resp    *authenticator.Response
	expires time.Time
}

func newCachedCertificateAuthenticator(opts x509request.VerifyOptionFunc, conversion x509request.UserConversion) *cachedCertificateAuthenticator {
	return &cachedCertificateAuthenticator{
		verifyOptions: opts,
		verify:        x509request.NewDynamic(opts, conversion),
		cache:         lru.New(CertificateCacheSize),
		now:           time.Now,
	}
}

func (a *cachedCertificateAuthenticator) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	opts, ok := a.verifyOptions()
	if !ok {
		return nil, false, nil
	}
	key := certificateCacheKey{roots: opts.Roots, chain: chainDigest(r.TLS.PeerCertificates)}
	now := a.now()
	if v, ok := a.cache.Get(key); ok {
		if e := v.(certificateCacheEntry); now.Before(e.expires) {
			return copyResponse(e.resp), true, nil
		}
		a.cache.Remove(key)
	}
	resp, ok, err := a.verify.AuthenticateRequest(r)
	if err != nil || !ok {
		return resp, ok, err
	}
	expires := now.Add(CertificateCacheTTL)
	for _, c := range r.TLS.PeerCertificates {
		if c.NotAfter.Before(expires) {
			expires = c.NotAfter
		}
	}
	a.cache.Add(key, certificateCacheEntry{resp: copyResponse(resp), expires: expires})
	return resp, true, nil
}

// chainDigest hashes every certificate the client sent, intermediates included: they take part
// in the verification.
func chainDigest(chain []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	for _, c := range chain {
		h.Write(c.Raw) // DER is self-delimiting: the concatenation names one chain
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// copyResponse gives each request its own user, so no filter sees another request's changes.
func copyResponse(resp *authenticator.Response) *authenticator.Response {
	u := resp.User
	extra := make(map[string][]string, len(u.GetExtra()))
	for k, v := range maps.All(u.GetExtra()) {
		extra[k] = slices.Clone(v)
	}
	return &authenticator.Response{
		Audiences: slices.Clone(resp.Audiences),
		User:      &user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(), Groups: slices.Clone(u.GetGroups()), Extra: extra},
	}
}
