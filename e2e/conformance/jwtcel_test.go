package conformance

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	"sealion.dev/e2e/steps"
	"sealion.dev/fixtures/dex"
)

// TestJWTAuthenticatorCEL is item 8 of issue 16: JWTAuthenticators written for Pinniped v0.40
// and later, with CEL claim mappings and validation rules, judge Dex's real ID tokens at
// exchange time. Each kind of rule lets pinny in and keeps walter out; the mapping expressions
// make the identity the certificate carries; a spec whose CEL does not compile is reported in
// the status and its authenticator lets no one in. Dex runs on this machine, or in the cluster
// where its pods cannot reach this machine (steps.StartDexForCluster).
func TestJWTAuthenticatorCEL(t *testing.T) {
	var (
		idp      *dex.Dex
		outsider = dex.User{Email: "walter@example.com", Username: "walter", Password: "walrus-password", Groups: []string{"walruses-only"}}
		tokens   = map[string]string{} // ID tokens by email
	)
	// Each rule below refuses walter only; a dropped rule would let him in.
	rules := map[string]string{
		"e2e-cel-required-claim": `
  claims: {username: email, groups: groups}
  claimValidationRules: [{claim: email, requiredValue: pinny@example.com}]`,
		"e2e-cel-claim-expression": `
  claims: {username: email, groups: groups}
  claimValidationRules: [{expression: '"seals" in claims.groups', message: only seals may log in}]`,
		"e2e-cel-user-rule": `
  claims: {username: email, groups: groups}
  userValidationRules: [{expression: '!user.username.startsWith("walter@")', message: walter may not log in}]`,
	}
	names := []string{"e2e-cel-mappings", "e2e-cel-invalid"}
	for name := range rules {
		names = append(names, name)
	}
	f := features.New("JWTAuthenticator CEL claim mappings and validation rules with Dex tokens").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var err error
			if idp, err = steps.StartDexForCluster(ctx, []dex.User{dex.DefaultUser, outsider}); err != nil {
				t.Fatal(err)
			}
			for _, u := range []dex.User{dex.DefaultUser, outsider} {
				tokens[u.Email] = dexIDToken(ctx, t, idp, u)
			}
			if info := steps.ClusterFrom(ctx).Info; !info.ClusterSigningKeyAvailable && info.HasExternalLoadBalancer {
				// The proxy's signer exists once the proxy is set up.
				waitForStrategy(ctx, t, cfg, configv1alpha1.StrategyTypeImpersonationProxy)
			}
			return ctx
		}).
		Assess("each validation rule lets pinny in and keeps walter out", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for name, spec := range rules {
				applyDexJWTAuthenticator(ctx, t, cfg, idp, name, spec)
				waitForJWTAuthenticatorPhase(ctx, t, cfg, name, "Ready")
				// Ready is written by one replica; the other may load the authenticator a moment later.
				eventually(ctx, t, func() error {
					resp := kubectlExchange(ctx, t, cfg, tokens[dex.DefaultUser.Email], "JWTAuthenticator", name)
					if resp.Status.Credential == nil {
						return fmt.Errorf("%s: pinny got no credential; message %v", name, resp.Status.Message)
					}
					if cn := parseCert(t, resp.Status.Credential.ClientCertificateData).Subject.CommonName; cn != dex.DefaultUser.Email {
						return fmt.Errorf("%s: certificate for %q, want %q", name, cn, dex.DefaultUser.Email)
					}
					return nil
				})
				resp := kubectlExchange(ctx, t, cfg, tokens[outsider.Email], "JWTAuthenticator", name)
				if resp.Status.Credential != nil || resp.Status.Message == nil || *resp.Status.Message != "authentication failed" {
					t.Errorf("%s: walter got %+v, want the uniform authentication failure", name, resp.Status)
				}
			}
			return ctx
		}).
		Assess("username and groups expressions make the certificate's identity", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			const name = "e2e-cel-mappings"
			// Kubernetes requires email_verified to be checked where the username comes from the email.
			applyDexJWTAuthenticator(ctx, t, cfg, idp, name, `
  claims:
    usernameExpression: '"dex:" + claims.email'
    groupsExpression: 'dyn(claims.groups).map(g, "dex:" + g)'
  claimValidationRules: [{expression: 'claims.email_verified == true', message: the email must be verified}]`)
			waitForJWTAuthenticatorPhase(ctx, t, cfg, name, "Ready")
			for _, u := range []dex.User{dex.DefaultUser, outsider} {
				wantGroups := make([]string, 0, len(u.Groups))
				for _, g := range u.Groups {
					wantGroups = append(wantGroups, "dex:"+g)
				}
				eventually(ctx, t, func() error {
					resp := kubectlExchange(ctx, t, cfg, tokens[u.Email], "JWTAuthenticator", name)
					if resp.Status.Credential == nil {
						return fmt.Errorf("%s got no credential; message %v", u.Email, resp.Status.Message)
					}
					subject := parseCert(t, resp.Status.Credential.ClientCertificateData).Subject
					if subject.CommonName != "dex:"+u.Email || fmt.Sprint(subject.Organization) != fmt.Sprint(wantGroups) {
						return fmt.Errorf("certificate subject %v, want CN dex:%s and O %v", subject, u.Email, wantGroups)
					}
					return nil
				})
			}
			return ctx
		}).
		Assess("an expression that does not compile is reported and lets no one in", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			const name = "e2e-cel-invalid"
			applyDexJWTAuthenticator(ctx, t, cfg, idp, name, `
  claims: {usernameExpression: 'claims.email +'}`)
			waitForJWTAuthenticatorPhase(ctx, t, cfg, name, "Error")
			out, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "get", "jwtauthenticator", name, "-o",
				`jsonpath={.status.conditions[?(@.type=="AuthenticatorValid")].reason} {.status.conditions[?(@.type=="AuthenticatorValid")].message}`)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out, "InvalidAuthenticator ") || !strings.Contains(out, "claims.usernameExpression") || !strings.Contains(out, "compilation failed") {
				t.Errorf("AuthenticatorValid = %q, want reason InvalidAuthenticator naming claims.usernameExpression's compile error", out)
			}
			resp := kubectlExchange(ctx, t, cfg, tokens[dex.DefaultUser.Email], "JWTAuthenticator", name)
			if resp.Status.Credential != nil || resp.Status.Message == nil || *resp.Status.Message != "authentication failed" {
				t.Errorf("pinny got %+v from an invalid authenticator, want the uniform authentication failure", resp.Status)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if idp != nil {
				_ = idp.Close()
			}
			for _, name := range names {
				_, _ = steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "delete", "--ignore-not-found", "jwtauthenticator/"+name)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// dexIDToken gets user's ID token for the pinniped-cli client from Dex with the password grant,
// which the Dex fixture enables on its local connector.
func dexIDToken(ctx context.Context, t *testing.T, idp *dex.Dex, user dex.User) string {
	t.Helper()
	octx := oidc.ClientContext(ctx, idp.HTTPClient())
	provider, err := oidc.NewProvider(octx, idp.IssuerURL)
	if err != nil {
		t.Fatalf("Dex discovery: %v", err)
	}
	conf := oauth2.Config{ClientID: dex.PublicClientID, Endpoint: provider.Endpoint(),
		Scopes: []string{oidc.ScopeOpenID, "email", "groups"}}
	tok, err := conf.PasswordCredentialsToken(octx, user.Email, user.Password)
	if err != nil {
		t.Fatalf("password grant for %s: %v", user.Email, err)
	}
	id, _ := tok.Extra("id_token").(string)
	if id == "" {
		t.Fatalf("Dex's token response for %s has no id_token", user.Email)
	}
	return id
}

// applyDexJWTAuthenticator applies a JWTAuthenticator that trusts idp's ID tokens for the
// pinniped-cli audience, with spec (YAML lines indented for spec) added to the spec.
func applyDexJWTAuthenticator(ctx context.Context, t *testing.T, cfg *envconf.Config, idp *dex.Dex, name, spec string) {
	t.Helper()
	_, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), fmt.Sprintf(`apiVersion: authentication.concierge.pinniped.dev/v1alpha1
kind: JWTAuthenticator
metadata: {name: %s}
spec:
  issuer: %s
  audience: %s
  tls: {certificateAuthorityData: %s}%s
`, name, idp.IssuerURL, dex.PublicClientID, base64.StdEncoding.EncodeToString(idp.CABundle), spec), "apply", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
}

func waitForJWTAuthenticatorPhase(ctx context.Context, t *testing.T, cfg *envconf.Config, name, phase string) {
	t.Helper()
	if _, err := steps.WaitFor(2*time.Minute, "jsonpath={.status.phase}="+phase, "jwtauthenticator/"+name)(ctx, cfg); err != nil {
		out, _ := steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "get", "jwtauthenticator", name, "-o", "yaml")
		t.Fatalf("JWTAuthenticator %s not %s: %v\n%s", name, phase, err, out)
	}
}
