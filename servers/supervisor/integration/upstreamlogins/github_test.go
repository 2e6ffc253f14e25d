package upstreamlogins

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"sealion.dev/fixtures/github"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/githubidp"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// TestGitHubLogin logs in through the GitHub double (a user already signed in to GitHub who
// authorized the app before), refreshes, and loses access when removed from the allowed
// organization.
func TestGitHubLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver as processes; skipped under -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The Supervisor listens first, so that its callback can be registered at GitHub.
	ups := &upstreams{}
	sup := startSupervisor(ctx, t, ups, issuer.IdentityProvider{
		DisplayName: "GitHub", Type: issuer.TypeGitHub, Flows: []issuer.Flow{issuer.FlowBrowserAuthcode},
		Kind: "GitHubIdentityProvider", Name: "github", UID: "github-uid",
	})
	gh, err := github.Start(ctx, github.Options{LoggedIn: github.DefaultUser.Login, CallbackURL: sup.issuerURL + provider.CallbackPath})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gh.Close() }()
	ghClient, err := githubidp.NewHTTPClient(gh.CABundle, connectors.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	provider, err := githubidp.New(githubidp.Config{
		Host: gh.Host, ClientID: github.DefaultClientID, ClientSecret: github.DefaultClientSecret,
		AllowedOrganizations: []string{"seals"}, HTTPClient: ghClient,
	})
	if err != nil {
		t.Fatal(err)
	}
	ups.add(issuer.TypeGitHub, "github", githubidp.NewConnector(provider))

	pool := x509.NewCertPool()
	pool.AddCert(sup.server.Certificate())
	pool.AppendCertsFromPEM(gh.CABundle)
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar, Transport: transport, Timeout: 30 * time.Second,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if req.URL.Scheme == "http" {
				return http.ErrUseLastResponse // the CLI's listener, which this test does not run
			}
			return nil
		}}
	cli := sup.cli()
	cliCtx := context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Transport: transport, Timeout: 30 * time.Second})
	verifier, state := oauth2.GenerateVerifier(), rand.Text()

	start := time.Now()
	resp, err := browser.Get(cli.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	loc, err := resp.Location()
	if err != nil || !strings.HasPrefix(loc.String(), cliCallback+"?") || loc.Query().Get("code") == "" || loc.Query().Get("state") != state {
		t.Fatalf("the GitHub login ended with %s at %s (%v); want the CLI with a code", resp.Status, resp.Request.URL, loc)
	}
	tok, err := cli.Exchange(cliCtx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("redeeming the code: %v", err)
	}
	t.Logf("login through the GitHub double and code redemption took %v", time.Since(start).Round(time.Millisecond))
	u := github.DefaultUser
	claims := sup.verify(ctx, t, tok.Extra("id_token").(string))
	wantSub := gh.APIURL + "?idpName=GitHub&login=pinny&id=4242"
	if claims["sub"] != wantSub || claims["username"] != "pinny:4242" || !slices.Equal(strs(claims["groups"]), []string{"seals/harbor-seals"}) {
		t.Errorf("ID token claims %v; want %s in seals/harbor-seals with sub %s", claims, u.Login, wantSub)
	}

	// A refresh reads the teams again.
	if err := gh.SetTeams(u.Login, github.Team{Org: "seals", Slug: "elephant-seals", Name: "Elephant Seals"}); err != nil {
		t.Fatal(err)
	}
	refreshed, err := cli.TokenSource(cliCtx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if c := sup.verify(ctx, t, refreshed.Extra("id_token").(string)); !slices.Equal(strs(c["groups"]), []string{"seals/elephant-seals"}) {
		t.Errorf("refreshed claims %v; want the new team", c)
	}

	// Out of the allowed organization, the user cannot refresh.
	if err := gh.SetOrgs(u.Login, "walruses"); err != nil {
		t.Fatal(err)
	}
	_, err = cli.TokenSource(cliCtx, &oauth2.Token{RefreshToken: refreshed.RefreshToken}).Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Errorf("refresh after leaving the allowed organization: %v; want invalid_grant", err)
	}
}
