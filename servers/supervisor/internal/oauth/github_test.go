package oauth

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

func TestGitHubLogin(t *testing.T) {
	gh := newFakeGitHub()
	ups := &fakeUpstreams{}
	ups.add(issuer.TypeGitHub, "github", gh)
	h := newHarnessWith(t, ups, issuer.IdentityProvider{
		DisplayName: "GitHub", Type: issuer.TypeGitHub, Flows: []issuer.Flow{issuer.FlowBrowserAuthcode},
		Kind: "GitHubIdentityProvider", Name: "github", UID: "github-uid",
	})

	l := newLogin()
	loc, resp := h.authorize(h.cli().AuthCodeURL(l.state, oauth2.S256ChallengeOption(l.verifier), oauth2.SetAuthURLParam("nonce", l.nonce)))
	if loc == nil || loc.Query().Get("code") == "" || loc.Query().Get("state") != l.state {
		t.Fatalf("GitHub login ended with %s at %v; want the CLI with a code", resp.Status, loc)
	}
	tok, err := h.cli().Exchange(h.clientContext(), loc.Query().Get("code"), oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	idt, claims := h.idToken(tok.Extra("id_token").(string), provider.PinnipedCLIClientID)
	wantSub := "https://api.github.com?idpName=GitHub&login=pinny&id=42"
	if idt.Subject != wantSub || claims["username"] != "pinny:42" || !slices.Equal(toStrings(claims["groups"]), []string{"seals-org/divers"}) {
		t.Errorf("ID token sub %q claims %v; want the GitHub user", idt.Subject, claims)
	}

	// A refresh reads the user again with the stored GitHub token.
	gh.mu.Lock()
	gh.groups = []string{"seals-org/divers", "seals-org/admins"}
	gh.mu.Unlock()
	refreshed, err := h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if _, c := h.idToken(refreshed.Extra("id_token").(string), provider.PinnipedCLIClientID); len(toStrings(c["groups"])) != 2 || c["sub"] != wantSub {
		t.Errorf("refreshed claims %v; want the new teams", c)
	}

	// A user GitHub's organization policy now refuses cannot refresh.
	gh.mu.Lock()
	gh.refuse = true
	gh.mu.Unlock()
	_, err = h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: refreshed.RefreshToken}).Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" || gh.refreshes != 2 {
		t.Errorf("refresh of a refused user: %v after %d upstream refreshes; want invalid_grant", err, gh.refreshes)
	}

	// Nor log in.
	loc, resp = h.authorize(h.cli().AuthCodeURL(l.state, oauth2.S256ChallengeOption(l.verifier)))
	if loc == nil || loc.Query().Get("error") != "access_denied" || !strings.Contains(loc.Query().Get("error_description"), "organization") {
		t.Errorf("login of a refused user ended with %s at %v; want access_denied", resp.Status, loc)
	}

	// GitHub has no password flow.
	_, loc = h.passwordAuthorize(newLogin(), "GitHub", "pinny", "password")
	if loc == nil || loc.Query().Get("error") != "access_denied" {
		t.Errorf("cli_password with GitHub: %v; want access_denied", loc)
	}
}
