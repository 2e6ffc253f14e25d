package oauth

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
	"sealion.dev/servers/supervisor/internal/oauth/sessions"
	"sealion.dev/servers/supervisor/internal/sessionpolicy"
)

// at moves the endpoints' clock to d after the real time, until the test ends.
func (h *harness) at(d time.Duration) {
	h.endpoints.shared.Now = func() time.Time { return time.Now().Add(d) }
	h.t.Cleanup(func() { h.endpoints.shared.Now = time.Now })
}

// refresh redeems refreshToken as cfg's client.
func (h *harness) refresh(cfg *oauth2.Config, refreshToken string) (*oauth2.Token, error) {
	h.t.Helper()
	return cfg.TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: refreshToken}).Token()
}

// requireSessionEnded checks that err is the refusal of a session that ended for the reason why.
func requireSessionEnded(t testing.TB, what string, err error, why string) {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" || re.ErrorDescription != "The provided authorization grant (e.g., authorization code, resource owner credentials) or refresh token is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client. The session ended: "+why+"." {
		t.Errorf("%s: %v; want invalid_grant saying the session ended: %s", what, err, why)
	}
}

// requireSessionExpiresIn checks the token response's session_expires_in, give or take the
// seconds a test takes.
func requireSessionExpiresIn(t *testing.T, what string, tok *oauth2.Token, want time.Duration) {
	t.Helper()
	got, ok := tok.Extra("session_expires_in").(float64)
	if d := want - time.Duration(got)*time.Second; !ok || d < 0 || d > 5*time.Second {
		t.Errorf("%s: session_expires_in %v, want %v", what, tok.Extra("session_expires_in"), want.Seconds())
	}
}

// A session lasts the FederationDomain's maximum from the login, however often it is refreshed;
// once it is over, neither a refresh nor a token exchange works, and the upstream is not asked.
func TestSessionMaximumLength(t *testing.T) {
	h := newHarness(t, nil)
	h.serveAgain(func(iss *issuer.Issuer) { iss.Sessions = sessionpolicy.Policy{Max: 10 * time.Minute} })
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	requireSessionExpiresIn(t, "the code's tokens", tok, 10*time.Minute)
	h.at(9 * time.Minute)
	tok, err = h.refresh(h.cli(), tok.RefreshToken)
	if err != nil {
		t.Fatalf("refresh a minute before the session ends: %v", err)
	}
	requireSessionExpiresIn(t, "the last refresh's tokens", tok, time.Minute)
	if status, body := h.exchange(tok.AccessToken, "cluster-1"); status != http.StatusOK {
		t.Fatalf("exchange before the end: %d %v", status, body)
	}

	h.at(10 * time.Minute)
	h.requireEnded("at the end", tok, "the session reached its maximum length of 10m0s")
}

// requireEnded checks that the session of the pinniped CLI's tok ended for the reason why: its
// refresh and its token exchange are refused saying so, and the upstream is not asked.
func (h *harness) requireEnded(when string, tok *oauth2.Token, why string) {
	h.t.Helper()
	refreshes := h.upstream.refreshes
	_, err := h.refresh(h.cli(), tok.RefreshToken)
	requireSessionEnded(h.t, "refresh "+when, err, why)
	if h.upstream.refreshes != refreshes {
		h.t.Error("the upstream was asked to refresh a session that had ended")
	}
	status, body := h.exchange(tok.AccessToken, "cluster-1")
	if status != http.StatusBadRequest || body["error"] != "invalid_grant" || !strings.HasSuffix(body["error_description"].(string), "The session ended: "+why+".") {
		h.t.Errorf("exchange %s: %d %v; want invalid_grant saying the session ended", when, status, body)
	}
}

// No access token of a refresh outlives its session.
func TestAccessTokenEndsWithTheSession(t *testing.T) {
	h := newHarness(t, nil)
	h.serveAgain(func(iss *issuer.Issuer) { iss.Sessions = sessionpolicy.Policy{Max: time.Minute} })
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	if tok, err = h.refresh(h.cli(), tok.RefreshToken); err != nil {
		t.Fatal(err)
	}
	if d := time.Until(tok.Expiry); d > time.Minute || d < 50*time.Second {
		t.Errorf("the access token of a one-minute session expires in %v, want the session's minute, not %v", d, sessions.AccessTokenLifetime)
	}
}

// With an idle timeout, each refresh starts the idle time again; a session left alone longer
// than that ends, even within its maximum length.
func TestSessionIdleTimeout(t *testing.T) {
	h := newHarness(t, nil)
	h.serveAgain(func(iss *issuer.Issuer) { iss.Sessions = sessionpolicy.Policy{Max: time.Hour, Idle: 5 * time.Minute} })
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{4 * time.Minute, 8 * time.Minute, 12 * time.Minute} {
		h.at(at)
		if tok, err = h.refresh(h.cli(), tok.RefreshToken); err != nil {
			t.Fatalf("refresh at %v, 4 minutes after the last: %v", at, err)
		}
	}
	// The stored refresh token is kept until the idle time is over, then as long as an access
	// token lives: by then the session is over.
	h.checkRefreshTokenKeptUntil(time.Now().Add(12*time.Minute + 5*time.Minute + sessions.AccessTokenLifetime))

	h.at(17 * time.Minute)
	_, err = h.refresh(h.cli(), tok.RefreshToken)
	requireSessionEnded(t, "refresh after 5 idle minutes", err, "the session was idle for more than 5m0s")
}

// checkRefreshTokenKeptUntil checks that the active refresh token's record is kept until want.
func (h *harness) checkRefreshTokenKeptUntil(want time.Time) {
	h.t.Helper()
	secrets, err := h.clientset.CoreV1().Secrets(namespace).List(h.ctx, metav1.ListOptions{LabelSelector: sessions.TypeLabel + "=" + typeRefreshToken})
	if err != nil {
		h.t.Fatal(err)
	}
	latest := time.Time{}
	for _, s := range secrets.Items {
		gc, err := time.Parse(time.RFC3339, s.Annotations[sessions.GarbageCollectAfterAnnotation])
		if err != nil {
			h.t.Fatal(err)
		}
		if gc.After(latest) {
			latest = gc
		}
	}
	if d := latest.Sub(want); d < -2*time.Second || d > 2*time.Second {
		h.t.Errorf("the newest refresh token is kept until %v, want %v", latest, want)
	}
}

// A shortened policy applies to the sessions already started, at their next refresh.
func TestSessionPolicyShortenedAppliesToStartedSessions(t *testing.T) {
	h := newHarness(t, nil)
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	requireSessionExpiresIn(t, "a default session", tok, 9*time.Hour)
	h.at(2 * time.Hour)
	if tok, err = h.refresh(h.cli(), tok.RefreshToken); err != nil {
		t.Fatalf("refresh within the default nine hours: %v", err)
	}
	requireSessionExpiresIn(t, "a default session refreshed after two hours", tok, 7*time.Hour)
	h.serveAgain(func(iss *issuer.Issuer) { iss.Sessions = sessionpolicy.Policy{Max: time.Hour} })
	_, err = h.refresh(h.cli(), tok.RefreshToken)
	requireSessionEnded(t, "refresh after the maximum was shortened to an hour", err, "the session reached its maximum length of 1h0m0s")
}

// An OIDCClient's own lifetimes shorten the FederationDomain's, never lengthen them.
func TestOIDCClientSessionLifetimes(t *testing.T) {
	h := newHarness(t, nil)
	h.serveAgain(func(iss *issuer.Issuer) { iss.Sessions = sessionpolicy.Policy{Max: time.Hour} })
	spec := fullSpec()
	spec.SessionLifetimes = &configv1alpha1.SessionLifetimes{MaxSessionSeconds: ptr.To[int32](600), IdleTimeoutSeconds: ptr.To[int32](300)}
	h.addOIDCClient(clientID, spec, clientSecret)
	cfg := h.webapp(provider.ScopeOpenID, provider.ScopeOfflineAccess)
	login := func() *oauth2.Token {
		l := h.loginAs(cfg)
		tok, err := cfg.Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	tok := login()
	h.at(6 * time.Minute)
	_, err := h.refresh(cfg, tok.RefreshToken)
	requireSessionEnded(t, "the client's session after 6 idle minutes", err, "the session was idle for more than 5m0s")

	h.at(0)
	tok = login()
	for _, at := range []time.Duration{4 * time.Minute, 8 * time.Minute} {
		h.at(at)
		if tok, err = h.refresh(cfg, tok.RefreshToken); err != nil {
			t.Fatalf("refresh at %v: %v", at, err)
		}
	}
	h.at(10 * time.Minute)
	_, err = h.refresh(cfg, tok.RefreshToken)
	requireSessionEnded(t, "the client's session after 10 minutes", err, "the session reached its maximum length of 10m0s")

	// A longer value than the FederationDomain's does not lengthen its sessions.
	spec.SessionLifetimes = &configv1alpha1.SessionLifetimes{MaxSessionSeconds: ptr.To[int32](sessionpolicy.MaxSeconds)}
	h.addOIDCClient(clientID, spec, clientSecret)
	h.at(0)
	tok = login()
	h.at(time.Hour)
	_, err = h.refresh(cfg, tok.RefreshToken)
	requireSessionEnded(t, "the client's session after the FederationDomain's hour", err, "the session reached its maximum length of 1h0m0s")
}

// A refresh token expires with its session, and fosite refuses it first; the refusal still says
// why the session ended. (Policies this short are for the test only: the API's minimum is a minute.)
func TestExpiredRefreshTokenSaysWhy(t *testing.T) {
	h := newHarness(t, nil)
	h.serveAgain(func(iss *issuer.Issuer) { iss.Sessions = sessionpolicy.Policy{Max: time.Hour, Idle: 2 * time.Second} })
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	_, err = h.refresh(h.cli(), tok.RefreshToken)
	requireSessionEnded(t, "refresh after the refresh token expired with its idle session", err, "the session was idle for more than 2s")
}
