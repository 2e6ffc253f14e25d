package oauth

import (
	"errors"
	"net/http"
	"sync"
	"testing"

	"golang.org/x/oauth2"
)

// RFC 6749 4.1.2: a code is redeemed at most once. Racing redemptions of one code give exactly
// one set of tokens, the others invalid_grant; a replay fails and revokes what the code issued.
func TestAuthorizationCodeRedeemedOnceUnderConcurrency(t *testing.T) {
	const racers = 8
	for round := range 5 {
		h := newHarness(t, nil)
		l := h.login()
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			tokens []*oauth2.Token
			errs   []error
		)
		start := make(chan struct{})
		for range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				tokens = append(tokens, tok)
			}()
		}
		close(start)
		wg.Wait()
		if len(tokens) != 1 {
			t.Fatalf("round %d: %d of %d concurrent redemptions of one code got tokens, want exactly 1 (errors: %v)", round, len(tokens), racers, errs)
		}
		for _, err := range errs {
			var re *oauth2.RetrieveError
			if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
				t.Errorf("round %d: a losing redemption got %v, want invalid_grant", round, err)
			}
		}
		// A loser that read the code after the winner deactivated it was already a replay and may
		// have revoked the winner's tokens; one more replay makes sure of it.
		winner := tokens[0]
		if _, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier)); err == nil {
			t.Fatalf("round %d: a replayed code was redeemed", round)
		}
		if status, _ := h.exchange(winner.AccessToken, "cluster-1"); status == http.StatusOK {
			t.Errorf("round %d: the access token of a replayed code still works", round)
		}
		if _, err := h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: winner.RefreshToken}).Token(); err == nil {
			t.Errorf("round %d: the refresh token of a replayed code still works", round)
		}
	}
}

// RFC 6819 5.2.2.3: a refresh token that was already rotated and is used again means a copy
// exists that should not; the whole login is revoked, including the newest tokens.
func TestRefreshTokenReuseRevokesTheLogin(t *testing.T) {
	h := newHarness(t, nil)
	l := h.login()
	first, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	refresh := func(refreshToken string) (*oauth2.Token, error) {
		return h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: refreshToken}).Token()
	}
	second, err := refresh(first.RefreshToken)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if status, body := h.exchange(second.AccessToken, "cluster-1"); status != http.StatusOK {
		t.Fatalf("the refreshed access token does not work: %d %v", status, body)
	}

	_, err = refresh(first.RefreshToken)
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Fatalf("reuse of a rotated refresh token: %v, want invalid_grant", err)
	}
	if _, err := refresh(second.RefreshToken); err == nil {
		t.Error("after a reuse was detected, the login's newest refresh token still works")
	}
	if status, _ := h.exchange(second.AccessToken, "cluster-1"); status == http.StatusOK {
		t.Error("after a reuse was detected, the login's newest access token still works")
	}
	if got := h.storedTypes(); got[typeRefreshToken] != 0 || got[typeAccessToken] != 0 {
		t.Errorf("after a reuse was detected, stored %v; want no access or refresh tokens", got)
	}
	h.upstream.mu.Lock()
	revoked := len(h.upstream.revoked)
	h.upstream.mu.Unlock()
	if revoked == 0 {
		t.Error("the login's upstream refresh token was not revoked")
	}
}

// Concurrent refreshes with one refresh token: one wins, none gets a second set of tokens.
func TestConcurrentRefreshesRotateOnce(t *testing.T) {
	const racers = 6
	h := newHarness(t, nil)
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins int
	)
	start := make(chan struct{})
	for range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if wins > 1 {
		t.Errorf("%d of %d concurrent refreshes with one refresh token got new tokens, want at most 1", wins, racers)
	}
}
