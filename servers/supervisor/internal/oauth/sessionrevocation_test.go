package oauth

import (
	"net/http"
	"testing"
	"time"

	"golang.org/x/oauth2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	configlisters "sealion.dev/core/generated/supervisor/listers/config/v1alpha1"
)

// revocations gives the endpoints an informer cache of SessionRevocations and returns it.
func (h *harness) revocations() cache.Indexer {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	h.endpoints.WithRevocations(configlisters.NewSessionRevocationLister(idx).SessionRevocations(namespace))
	return idx
}

// revoke adds a SessionRevocation created created ago with spec to the cache.
func revoke(t *testing.T, idx cache.Indexer, name string, created time.Duration, spec configv1alpha1.SessionRevocationSpec) {
	t.Helper()
	err := idx.Add(&configv1alpha1.SessionRevocation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, CreationTimestamp: metav1.NewTime(time.Now().Add(-created).Truncate(time.Second))},
		Spec:       spec,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An administrator's SessionRevocation ends the sessions it names at once: their refreshes and
// token exchanges are refused, saying so, without asking the upstream. Revocations that name
// someone else, a username that only differs in case (names are compared exactly, as
// Kubernetes' RBAC compares them), another FederationDomain, or a time before the login, end
// nothing: no one locks another user out by accident. A login after the revocation works.
func TestSessionRevocation(t *testing.T) {
	h := newHarness(t, nil)
	revs := h.revocations()
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	loggedIn := time.Now()

	revoke(t, revs, "someone-else", 0, configv1alpha1.SessionRevocationSpec{Usernames: []string{"walrus@example.com"}, Groups: []string{"walruses-admins"}})
	revoke(t, revs, "case", 0, configv1alpha1.SessionRevocationSpec{Usernames: []string{"Pinny@example.com", "pinny@example.com "}})
	revoke(t, revs, "other-fd", 0, configv1alpha1.SessionRevocationSpec{FederationDomainName: "other", Usernames: []string{"pinny@example.com"}})
	revoke(t, revs, "earlier", 0, configv1alpha1.SessionRevocationSpec{Groups: []string{"seals"},
		StartedBefore: &metav1.Time{Time: loggedIn.Add(-time.Minute)}})
	if tok, err = h.refresh(h.cli(), tok.RefreshToken); err != nil {
		t.Fatalf("refresh with revocations of others: %v", err)
	}
	if status, body := h.exchange(tok.AccessToken, "cluster-1"); status != http.StatusOK {
		t.Fatalf("exchange with revocations of others: %d %v", status, body)
	}

	// The user's group, downstream (as the FederationDomain gives it), in this FederationDomain.
	revoke(t, revs, "walruses", 0, configv1alpha1.SessionRevocationSpec{FederationDomainName: "fd", Groups: []string{"walruses"}})
	h.requireEnded("after the revocation", tok, "an administrator ended it")

	// A code of a login made before the revocation is refused too: the login is what ends.
	if err := revs.Replace(nil, ""); err != nil {
		t.Fatal(err)
	}
	late := h.login()
	revoke(t, revs, "everyone", 0, configv1alpha1.SessionRevocationSpec{})
	_, err = h.cli().Exchange(h.clientContext(), late.code, oauth2.VerifierOption(late.verifier))
	requireSessionEnded(t, "a code redeemed after the revocation", err, "an administrator ended it")

	// A new login, once the revocations are in the past, is a new session.
	if err := revs.Replace(nil, ""); err != nil {
		t.Fatal(err)
	}
	revoke(t, revs, "before", 2*time.Second, configv1alpha1.SessionRevocationSpec{Usernames: []string{"pinny@example.com"}})
	again := h.login()
	if tok, err = h.cli().Exchange(h.clientContext(), again.code, oauth2.VerifierOption(again.verifier)); err != nil {
		t.Fatalf("a login after the revocation: %v", err)
	}
	if _, err = h.refresh(h.cli(), tok.RefreshToken); err != nil {
		t.Fatalf("refresh of a login after the revocation: %v", err)
	}
}
