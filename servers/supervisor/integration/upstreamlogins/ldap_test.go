package upstreamlogins

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"sealion.dev/core/testing/testdeps"
	"sealion.dev/fixtures/ldap"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
	"sealion.dev/servers/supervisor/internal/connectors/ldapidp"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

const ldapIDPName = "Corp LDAP"

// startLDAPSupervisor serves an issuer whose one identity provider, ldapIDPName, is dir.
func startLDAPSupervisor(ctx context.Context, t *testing.T, dir *ldap.LDAP) *supervisor {
	t.Helper()
	authenticator, err := ldapclient.New(ldapclient.Config{
		Host: dir.LDAPSAddress, CABundle: dir.CABundle, BindUsername: dir.BindDN, BindPassword: dir.BindPassword,
		UserSearch:  ldapclient.UserSearch{Base: ldap.UsersBaseDN, UsernameAttribute: "uid", UIDAttribute: "entryUUID"},
		GroupSearch: ldapclient.GroupSearch{Base: ldap.GroupsBaseDN, GroupNameAttribute: "cn"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ups := &upstreams{}
	ups.add(issuer.TypeLDAP, "corp-ldap", ldapidp.NewConnector(authenticator, issuer.TypeLDAP))
	return startSupervisor(ctx, t, ups, issuer.IdentityProvider{
		DisplayName: ldapIDPName, Type: issuer.TypeLDAP, Flows: []issuer.Flow{issuer.FlowCLIPassword, issuer.FlowBrowserAuthcode},
		Kind: "LDAPIdentityProvider", Name: "corp-ldap", UID: "ldap-uid",
	})
}

// TestPasswordLoginsWithLDAP logs in to an LDAPIdentityProvider (a real slapd) with the CLI's
// cli_password flow and with the Supervisor's login form, refreshes, and loses access when the
// user is deleted.
func TestPasswordLoginsWithLDAP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver and slapd as processes; skipped under -short")
	}
	_, err := ldap.FindSlapd()
	testdeps.Require(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	dir, err := ldap.Start(ctx, ldap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dir.Close() }()
	sup := startLDAPSupervisor(ctx, t, dir)

	pool := x509.NewCertPool()
	pool.AddCert(sup.server.Certificate())
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	cliHTTP := &http.Client{Transport: transport, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cliCtx := context.WithValue(ctx, oauth2.HTTPClient, cliHTTP)
	cli := sup.cli()
	verifier, nonce, state := oauth2.GenerateVerifier(), rand.Text(), rand.Text()
	authURL := cli.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("pinniped_idp_name", ldapIDPName))
	// passwordLogin is the CLI's side of the cli_password flow: it reads the redirect's query.
	passwordLogin := func(username, password string) url.Values {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Pinniped-Username", username)
		req.Header.Set("Pinniped-Password", password)
		resp, err := cliHTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		loc, err := resp.Location()
		if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), cliCallback+"?") {
			t.Fatalf("password login answered %s to %v; want 302 Found to the CLI's redirect URI", resp.Status, loc)
		}
		return loc.Query()
	}
	q := passwordLogin("pinny", "wrong-password")
	if want := "The resource owner or authorization server denied the request. Username/password not accepted by LDAP provider."; q.Get("error") != "access_denied" || q.Get("error_description") != want {
		t.Errorf("wrong password: %v; want access_denied: %s", q, want)
	}

	start := time.Now()
	q = passwordLogin("pinny", "fixture-password")
	if q.Get("code") == "" || q.Get("state") != state {
		t.Fatalf("password login: %v; want a code and state %q", q, state)
	}
	tok, err := cli.Exchange(cliCtx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("redeeming the code: %v", err)
	}
	t.Logf("cli_password login against slapd and code redemption took %v", time.Since(start).Round(time.Millisecond))
	claims := sup.verify(ctx, t, tok.Extra("id_token").(string))
	wantSubPrefix := "ldaps://" + dir.LDAPSAddress + "?base=" + url.QueryEscape(ldap.UsersBaseDN) + "&idpName=Corp+LDAP&sub="
	if claims["username"] != "pinny" || !slices.Equal(strs(claims["groups"]), []string{"seals", "walruses"}) ||
		claims["nonce"] != nonce || !strings.HasPrefix(claims["sub"].(string), wantSubPrefix) {
		t.Errorf("ID token claims %v; want pinny in seals and walruses, sub starting %s", claims, wantSubPrefix)
	}

	// A refresh searches the directory again and sees new groups.
	if err := dir.SetGroups(ctx, "pinny", []string{"seals"}); err != nil {
		t.Fatal(err)
	}
	refreshed, err := cli.TokenSource(cliCtx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if c := sup.verify(ctx, t, refreshed.Extra("id_token").(string)); !slices.Equal(strs(c["groups"]), []string{"seals"}) || c["sub"] != claims["sub"] {
		t.Errorf("refreshed claims %v; want the same user in seals only", c)
	}

	// The login form in a browser (net/http with cookies) reaches the same user.
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar, Transport: transport, Timeout: 30 * time.Second,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if req.URL.Scheme == "http" {
				return http.ErrUseLastResponse
			}
			return nil
		}}
	resp, err := browser.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.Request.URL.Path != "/fd"+provider.LoginPath {
		t.Fatalf("the browser login led to %s %s; want the login form", resp.Status, resp.Request.URL)
	}
	resp, err = browser.PostForm(sup.issuerURL+provider.LoginPath, url.Values{
		"state": {resp.Request.URL.Query().Get("state")}, "username": {"pinny"}, "password": {"fixture-password"},
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if loc, err := resp.Location(); err != nil || loc.Query().Get("code") == "" {
		t.Errorf("the login form answered %s to %v; want the CLI with a code", resp.Status, loc)
	}

	// Once the user is deleted, refreshes fail.
	if err := dir.DeleteUser(ctx, "pinny"); err != nil {
		t.Fatal(err)
	}
	_, err = cli.TokenSource(cliCtx, &oauth2.Token{RefreshToken: refreshed.RefreshToken}).Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Errorf("refresh of a deleted user: %v; want invalid_grant", err)
	}
}
