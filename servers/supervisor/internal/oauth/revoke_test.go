package oauth

import (
	"maps"
	"slices"
	"testing"
	"time"

	"golang.org/x/oauth2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
)

func oidcIDP() issuer.IdentityProvider {
	return issuer.IdentityProvider{
		DisplayName: idpName, Type: issuer.TypeOIDC, Flows: []issuer.Flow{issuer.FlowBrowserAuthcode},
		Kind: "OIDCIdentityProvider", Name: "upstream-idp", UID: "idp-uid",
	}
}

// upstreamTokens are the refresh tokens the fake upstream still accepts.
func (u *fakeUpstream) upstreamTokens() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Sorted(maps.Keys(u.refreshTokens))
}

func (u *fakeUpstream) revokedTokens() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Sorted(slices.Values(u.revoked))
}

func (u *fakeUpstream) setRefuseRevocation(refuse bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.refuseRevocation = refuse
}

func TestReplayedCodeRevokesUpstreamToken(t *testing.T) {
	h := newHarness(t, nil)
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	// Rotating the refresh token keeps the login, and the upstream token.
	if _, err := h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if got := h.upstream.revokedTokens(); len(got) != 0 {
		t.Fatalf("a refresh revoked upstream tokens %v", got)
	}
	live := h.upstream.upstreamTokens()
	if len(live) != 1 {
		t.Fatalf("upstream has refresh tokens %v, want one", live)
	}

	if _, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier)); err == nil {
		t.Fatal("an authorization code was redeemed twice")
	}
	if got := h.upstream.revokedTokens(); !slices.Equal(got, live) {
		t.Errorf("after the code was replayed, the upstream revoked %v; want the login's refresh token %v", got, live)
	}
}

// expireAll expires every record stored in h's Secrets, by moving their garbage-collect-after
// time to the past, and returns the storage of a second Supervisor replica to collect them.
func expireAll(h *harness, ups sessions.Connectors) *sessions.Storage {
	h.t.Helper()
	secrets := h.clientset.CoreV1().Secrets(namespace)
	list, err := secrets.List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for i := range list.Items {
		s := &list.Items[i]
		s.Annotations[sessions.GarbageCollectAfterAnnotation] = past
		if _, err := secrets.Update(h.ctx, s, metav1.UpdateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
	return sessions.NewStorage(secrets, ups, h.keys)
}

// twoLogins logs in twice at h: the first login's code is redeemed, the second's never is.
// It returns the upstream refresh tokens the logins hold.
func twoLogins(t *testing.T, h *harness) []string {
	l := h.login()
	if _, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier)); err != nil {
		t.Fatal(err)
	}
	h.login()
	tokens := h.upstream.upstreamTokens()
	if len(tokens) != 2 {
		t.Fatalf("upstream has refresh tokens %v, want two", tokens)
	}
	return tokens
}

func TestGarbageCollectRevokesUpstreamTokens(t *testing.T) {
	ups := &fakeUpstreams{}
	h := newHarnessWith(t, ups, oidcIDP())
	tokens := twoLogins(t, h)
	gc := expireAll(h, ups)

	// The upstream fails: the Secrets that end a login stay, marked, for the next pass.
	h.upstream.setRefuseRevocation(true)
	if _, err := gc.GarbageCollect(h.ctx); err != nil {
		t.Fatal(err)
	}
	left := h.secrets()
	if len(left) != 2 {
		t.Fatalf("after a failed revocation, left %v; want the refresh token and the unredeemed code", left)
	}
	for name, attempts := range left {
		if attempts != "1" {
			t.Errorf("Secret %s records %q failed revocations, want 1", name, attempts)
		}
	}

	h.upstream.setRefuseRevocation(false)
	if _, err := gc.GarbageCollect(h.ctx); err != nil {
		t.Fatal(err)
	}
	if left := h.secrets(); len(left) != 0 {
		t.Errorf("after the upstream recovered, left %v", left)
	}
	if got := h.upstream.revokedTokens(); !slices.Equal(got, tokens) {
		t.Errorf("upstream revoked %v, want each login's token once: %v", got, tokens)
	}
}

func TestGarbageCollectGivesUpRevoking(t *testing.T) {
	ups := &fakeUpstreams{}
	h := newHarnessWith(t, ups, oidcIDP())
	twoLogins(t, h)
	gc := expireAll(h, ups)
	h.upstream.setRefuseRevocation(true)
	for pass := 1; pass <= maxRevocationAttempts; pass++ {
		if _, err := gc.GarbageCollect(h.ctx); err != nil {
			t.Fatal(err)
		}
		left := h.secrets()
		if pass < maxRevocationAttempts && len(left) != 2 || pass == maxRevocationAttempts && len(left) != 0 {
			t.Errorf("after pass %d, left %v", pass, left)
		}
	}
}

// secrets maps the names of the stored Secrets to their count of failed revocations.
func (h *harness) secrets() map[string]string {
	h.t.Helper()
	list, err := h.clientset.CoreV1().Secrets(namespace).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	names := map[string]string{}
	for _, s := range list.Items {
		names[s.Name] = s.Annotations[sessions.RevocationAttemptsAnnotation]
	}
	return names
}

// TestRevokeKeepsTokensOfAnotherIssuer checks that the OIDC connector does not send a refresh
// token to its identity provider when the provider's issuer changed since the login: the token
// belongs to the old issuer.
func TestRevokeKeepsTokensOfAnotherIssuer(t *testing.T) {
	ups := &fakeUpstreams{}
	h := newHarnessWith(t, ups, oidcIDP())
	conn, ok := ups.Get(issuer.TypeOIDC, namespace, "upstream-idp")
	if !ok {
		t.Fatal("the fake upstream has no connector")
	}
	revoked, err := conn.(connectors.RevokeConnector).Revoke(h.ctx, connectors.Session{OIDC: &connectors.OIDCSession{
		UpstreamIssuer: "https://old-issuer.example.com", UpstreamSubject: "upstream-subject", UpstreamRefreshToken: "upstream-refresh",
	}})
	if revoked != "" || err != nil {
		t.Errorf("Revoke() = %q, %v", revoked, err)
	}
	if got := h.upstream.revokedTokens(); len(got) != 0 {
		t.Errorf("upstream revoked %v, want nothing", got)
	}
}
