package upstreamlogins

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/testing/testdeps"
	"sealion.dev/fixtures/activedirectory"
	"sealion.dev/servers/supervisor/internal/connectors/activedirectoryidp"
	"sealion.dev/servers/supervisor/internal/connectors/ldapidp"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// TestCLIPasswordLoginWithActiveDirectory logs in to an ActiveDirectoryIdentityProvider (a
// Samba domain controller) with the CLI's cli_password flow, and loses access once the account
// is disabled.
func TestCLIPasswordLoginWithActiveDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver and a Samba domain controller as processes; skipped under -short")
	}
	testdeps.Require(t, activedirectory.Available())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	ad, err := activedirectory.Start(ctx, activedirectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ad.Close() }()
	cfg, err := activedirectoryidp.ResolveSearchBases(ctx, activedirectoryidp.ConfigFromSpec(
		idpv1alpha1.ActiveDirectoryIdentityProviderSpec{Host: ad.LDAPSAddress}, ad.CABundle, ad.BindDN, ad.BindPassword))
	if err != nil {
		t.Fatal(err)
	}
	authenticator, err := activedirectoryidp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ups := &upstreams{}
	ups.add(issuer.TypeActiveDirectory, "corp-ad", ldapidp.NewConnector(authenticator, issuer.TypeActiveDirectory))
	sup := startSupervisor(ctx, t, ups, issuer.IdentityProvider{
		DisplayName: "Corp AD", Type: issuer.TypeActiveDirectory, Flows: []issuer.Flow{issuer.FlowCLIPassword, issuer.FlowBrowserAuthcode},
		Kind: "ActiveDirectoryIdentityProvider", Name: "corp-ad", UID: "ad-uid",
	})

	pool := x509.NewCertPool()
	pool.AddCert(sup.server.Certificate())
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	cliHTTP := &http.Client{Transport: transport, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cliCtx := context.WithValue(ctx, oauth2.HTTPClient, cliHTTP)
	cli := sup.cli()
	verifier, state := oauth2.GenerateVerifier(), rand.Text()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cli.AuthCodeURL(state, oidc.Nonce(rand.Text()), oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("pinniped_idp_name", "Corp AD"), oauth2.SetAuthURLParam("pinniped_idp_type", "activedirectory")), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Pinniped-Username", "pinny")
	req.Header.Set("Pinniped-Password", "fixture-password")
	start := time.Now()
	resp, err := cliHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	loc, err := resp.Location()
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), cliCallback+"?") || loc.Query().Get("code") == "" {
		t.Fatalf("password login answered %s to %v; want 302 Found to the CLI with a code", resp.Status, loc)
	}
	tok, err := cli.Exchange(cliCtx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("redeeming the code: %v", err)
	}
	t.Logf("cli_password login against Samba and code redemption took %v", time.Since(start).Round(time.Millisecond))
	claims := sup.verify(ctx, t, tok.Extra("id_token").(string))
	wantSubPrefix := "ldaps://" + ad.LDAPSAddress + "?base=" + url.QueryEscape(activedirectory.BaseDN) + "&idpName=Corp+AD&sub="
	if claims["username"] != "pinny@sealion.test" || !slices.Equal(strs(claims["groups"]), []string{"marine-mammals@sealion.test", "seals@sealion.test"}) ||
		!strings.HasPrefix(claims["sub"].(string), wantSubPrefix) {
		t.Errorf("ID token claims %v; want pinny@sealion.test in seals and (nested) marine-mammals, sub starting %s", claims, wantSubPrefix)
	}

	refreshed, err := cli.TokenSource(cliCtx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if err := ad.Disable(ctx, "pinny"); err != nil {
		t.Fatal(err)
	}
	_, err = cli.TokenSource(cliCtx, &oauth2.Token{RefreshToken: refreshed.RefreshToken}).Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Errorf("refresh of a disabled account: %v; want invalid_grant", err)
	}
}
