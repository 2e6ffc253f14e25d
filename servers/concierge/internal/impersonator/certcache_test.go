package impersonator

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"sync"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"

	"sealion.dev/core/certauthority"
)

// bundleVar is a CABundleSource whose bundle a test replaces, as a rotation does.
type bundleVar struct {
	mu     sync.Mutex
	bundle []byte
}

func (b *bundleVar) CABundle() []byte  { b.mu.Lock(); defer b.mu.Unlock(); return b.bundle }
func (b *bundleVar) set(bundle []byte) { b.mu.Lock(); defer b.mu.Unlock(); b.bundle = bundle }

// countingVerifier counts the verifications that reach the apiserver's x509 authenticator.
type countingVerifier struct {
	next  authenticator.Request
	calls int
}

func (c *countingVerifier) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	c.calls++
	return c.next.AuthenticateRequest(r)
}

func cachedForTest(t *testing.T, src CABundleSource, now *time.Time) (*cachedCertificateAuthenticator, *countingVerifier) {
	t.Helper()
	a := newCachedCertificateAuthenticator(CAContent("test", src).VerifyOptions, x509request.CommonNameUserConversion)
	counter := &countingVerifier{next: a.verify}
	a.verify, a.now = counter, func() time.Time { return *now }
	return a, counter
}

func requestWithCerts(t *testing.T, certPEMs ...[]byte) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, "https://proxy/api", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.TLS = &tls.ConnectionState{}
	for _, p := range certPEMs {
		block, _ := pem.Decode(p)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		r.TLS.PeerCertificates = append(r.TLS.PeerCertificates, cert)
	}
	return r
}

func issue(t *testing.T, ca *certauthority.CA, name string, groups []string, ttl time.Duration) []byte {
	t.Helper()
	certPEM, _, _, err := ca.IssueClientCert(name, groups, nil, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM
}

func TestCertificateCacheVerifiesOncePerChain(t *testing.T) {
	ca, err := certauthority.New("signer", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a, counter := cachedForTest(t, &bundleVar{bundle: ca.Bundle()}, &now)
	alice := issue(t, ca, "alice", []string{"devs"}, time.Hour)

	for range 3 {
		resp, ok, err := a.AuthenticateRequest(requestWithCerts(t, alice))
		if err != nil || !ok || resp.User.GetName() != "alice" {
			t.Fatalf("got %v %v %v", resp, ok, err)
		}
		// A later filter changing its user must not change what the next request gets.
		resp.User.GetExtra()["changed"] = []string{"x"}
		groups := resp.User.GetGroups()
		groups[0] = "admins"
	}
	resp, _, _ := a.AuthenticateRequest(requestWithCerts(t, alice))
	if g := resp.User.GetGroups(); len(g) != 1 || g[0] != "devs" || resp.User.GetExtra()["changed"] != nil {
		t.Errorf("a cached answer was changed by an earlier request: %v %v", g, resp.User.GetExtra())
	}
	if counter.calls != 1 {
		t.Errorf("%d verifications for one chain, want 1", counter.calls)
	}

	// Another certificate of the same user is another chain: verified on its own.
	if _, ok, err := a.AuthenticateRequest(requestWithCerts(t, issue(t, ca, "alice", []string{"devs"}, time.Hour))); !ok || err != nil {
		t.Fatalf("got %v %v", ok, err)
	}
	if counter.calls != 2 {
		t.Errorf("%d verifications for two chains, want 2", counter.calls)
	}

	// After the TTL the chain is verified again.
	now = now.Add(CertificateCacheTTL + time.Second)
	if _, ok, err := a.AuthenticateRequest(requestWithCerts(t, alice)); !ok || err != nil {
		t.Fatalf("got %v %v", ok, err)
	}
	if counter.calls != 3 {
		t.Errorf("%d verifications after the TTL, want 3", counter.calls)
	}
}

// A certificate expiring before the TTL is not trusted past its own expiry.
func TestCertificateCacheEndsWithTheCertificate(t *testing.T) {
	ca, err := certauthority.New("signer", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a, counter := cachedForTest(t, &bundleVar{bundle: ca.Bundle()}, &now)
	short := issue(t, ca, "alice", nil, 10*time.Second)
	if _, ok, err := a.AuthenticateRequest(requestWithCerts(t, short)); !ok || err != nil {
		t.Fatalf("got %v %v", ok, err)
	}
	// Within the TTL, past the certificate's NotAfter: verified again (by the real clock, which
	// has not reached NotAfter, so it still passes).
	now = now.Add(20 * time.Second)
	if _, ok, err := a.AuthenticateRequest(requestWithCerts(t, short)); !ok || err != nil {
		t.Fatalf("got %v %v", ok, err)
	}
	if counter.calls != 2 {
		t.Errorf("an expired certificate was answered from the cache (%d verifications)", counter.calls)
	}
}

// Failures are never remembered, and a CA rotation never reuses an answer of the old CA.
func TestCertificateCacheFailuresAndRotation(t *testing.T) {
	oldCA, err := certauthority.New("old", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := certauthority.New("new", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	src := &bundleVar{bundle: oldCA.Bundle()}
	now := time.Now()
	a, counter := cachedForTest(t, src, &now)
	alice := issue(t, oldCA, "alice", nil, time.Hour)
	mallory := issue(t, newCA, "mallory", nil, time.Hour)

	for range 2 {
		if _, ok, err := a.AuthenticateRequest(requestWithCerts(t, mallory)); ok || err == nil {
			t.Fatalf("a certificate of another CA was accepted: %v %v", ok, err)
		}
	}
	if counter.calls != 2 {
		t.Errorf("%d verifications of a refused chain sent twice, want 2", counter.calls)
	}
	if _, ok, err := a.AuthenticateRequest(requestWithCerts(t, alice)); !ok || err != nil {
		t.Fatalf("got %v %v", ok, err)
	}

	src.set(newCA.Bundle())
	if _, ok, err := a.AuthenticateRequest(requestWithCerts(t, alice)); ok || err == nil {
		t.Errorf("a certificate of the rotated-out CA was accepted from the cache: %v %v", ok, err)
	}
	if _, ok, err := a.AuthenticateRequest(requestWithCerts(t, mallory)); !ok || err != nil {
		t.Errorf("a certificate of the new CA was refused: %v %v", ok, err)
	}

	// Appending the old leaf to a good chain, or sending no certificate, is its own case.
	if _, ok, err := a.AuthenticateRequest(requestWithCerts(t, alice, mallory)); ok || err == nil {
		t.Errorf("a chain whose leaf the CA did not sign was accepted: %v %v", ok, err)
	}
	if resp, ok, err := a.AuthenticateRequest(requestWithCerts(t)); ok || err != nil || resp != nil {
		t.Errorf("no certificate gave %v %v %v, want no opinion", resp, ok, err)
	}
}
