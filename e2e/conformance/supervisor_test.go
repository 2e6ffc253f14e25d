package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/e2e/steps"
	"sealion.dev/fixtures/activedirectory"
	"sealion.dev/fixtures/browser"
	"sealion.dev/fixtures/dex"
	"sealion.dev/fixtures/github"
	"sealion.dev/fixtures/ldap"
)

// supervisorCallbackPath is where the Supervisor takes upstream OIDC and GitHub logins back, under
// each FederationDomain's issuer: part of its wire contract, which upstream apps are registered with.
const supervisorCallbackPath = "/callback"

// The tests of this file log in through a Supervisor installed on the test's cluster, with the
// upstream identity providers running on this machine, except Dex, LDAP and the GitHub double,
// which run in the cluster where the cluster's pods cannot reach this machine
// (steps.StartDexForCluster, steps.StartLDAPForCluster, steps.StartGitHubForCluster): each has a
// FederationDomain of its own and a JWTAuthenticator trusting it, and the user gets a kubeconfig
// from `pinniped get kubeconfig`, which finds the Supervisor behind the authenticator's issuer.
// Those with an upstream only on this machine skip, saying so, on clusters not on it.

func idpTypeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: idpv1alpha1.SchemeGroupVersion.String(), Kind: kind}
}

// TestSupervisorLDAPLogin: LDAP (slapd) behind the Supervisor, with the CLI password flow through
// kubectl and the Supervisor's login form in a browser; group changes and deleted users upstream
// are seen at the next refresh; a policy transform turns a user away with its message.
func TestSupervisorLDAPLogin(t *testing.T) {
	var (
		fl        *federatedLogin
		directory *ldap.LDAP
		chromium  *browser.Browser
		pinny     cliUser
	)
	pinnyUser := ldap.DefaultUsers[0] // groups seals, walruses
	const rejection = "wally may not use this cluster"
	f := features.New("LDAP through the Supervisor").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			host := supervisorHost(ctx, t, cfg)
			var err error
			if directory, err = steps.StartLDAPForCluster(ctx, nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = directory.Close() })
			idp := &idpv1alpha1.LDAPIdentityProvider{
				TypeMeta:   idpTypeMeta("LDAPIdentityProvider"),
				ObjectMeta: metav1.ObjectMeta{Name: "ldap", Namespace: underTest(ctx).Supervisor.Namespace},
				Spec: idpv1alpha1.LDAPIdentityProviderSpec{
					Host: directory.LDAPSAddress,
					TLS:  &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(directory.CABundle)},
					Bind: idpv1alpha1.LDAPIdentityProviderBind{SecretName: "ldap-bind"},
					UserSearch: idpv1alpha1.LDAPIdentityProviderUserSearch{Base: ldap.UsersBaseDN, Filter: "uid={}",
						Attributes: idpv1alpha1.LDAPIdentityProviderUserSearchAttributes{Username: "uid", UID: "entryUUID"}},
					GroupSearch: idpv1alpha1.LDAPIdentityProviderGroupSearch{Base: ldap.GroupsBaseDN, Filter: "member={}",
						Attributes: idpv1alpha1.LDAPIdentityProviderGroupSearchAttributes{GroupName: "cn"}},
				},
			}
			createIDP(ctx, t, cfg, "ldapidentityprovider/ldap", idp, secret(ctx, "ldap-bind", corev1.SecretTypeBasicAuth,
				map[string]string{corev1.BasicAuthUsernameKey: directory.BindDN, corev1.BasicAuthPasswordKey: directory.BindPassword}))
			// The FederationDomain's own examples check the policy when it is applied.
			fl = federate(ctx, t, cfg, host, "ldap", federationIDP("ldap", "LDAPIdentityProvider", "ldap", `      expressions:
      - type: policy/v1
        expression: 'username != "wally"'
        message: "`+rejection+`"
      examples:
      - username: wally
        expects: {rejected: true, message: "`+rejection+`"}
      - username: pinny
        expects: {username: pinny}
`))
			bindGroup(ctx, t, cfg, "e2e-supervisor-ldap-seals", "seals")
			// Users made here keep their caches across the assessments.
			pinny = fl.user(ctx, t, "ldap", "cli_password", "PINNIPED_USERNAME=pinny", "PINNIPED_PASSWORD="+pinnyUser.Password)
			chromium = fl.browser(ctx, t, nil)
			return ctx
		}).
		Assess("kubectl logs in with the CLI password flow", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			began := time.Now()
			eventually(ctx, t, func() error { _, err := pinny.kubectl(ctx, "get", "pods", "-n", "kube-system"); return err })
			t.Logf("first kubectl, CLI password login included: %s", time.Since(began).Round(time.Millisecond))
			expectWhoami(ctx, t, pinny, "username: pinny", "- seals", "- walruses")
			return ctx
		}).
		Assess("the browser logs in on the Supervisor's form", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			u := fl.user(ctx, t, "ldap", "browser_authcode")
			login := browser.Login{Username: "pinny", Password: pinnyUser.Password, Form: browser.SupervisorForm}
			if out, err := u.kubectlWithBrowserLogin(ctx, t, chromium, login, "get", "pods", "-n", "kube-system"); err != nil {
				t.Fatalf("kubectl: %v\n%s", err, out)
			}
			expectWhoami(ctx, t, u, "username: pinny", "- seals")
			return ctx
		}).
		Assess("a group left upstream is gone after the next refresh", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := directory.SetGroups(ctx, "pinny", []string{"seals"}); err != nil {
				t.Fatal(err)
			}
			stderr := refreshAndRun(ctx, t, pinny)
			if !strings.Contains(stderr, "refreshing the session with its refresh token") {
				t.Errorf("kubectl did not refresh the session:\n%s", stderr)
			}
			out := expectWhoami(ctx, t, pinny, "username: pinny", "- seals")
			if strings.Contains(out, "walruses") {
				t.Errorf("whoami still shows the group left upstream:\n%s", out)
			}
			return ctx
		}).
		Assess("a policy transform turns a user away with its message", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			wally := fl.user(ctx, t, "ldap", "cli_password", "PINNIPED_USERNAME=wally", "PINNIPED_PASSWORD="+ldap.DefaultUsers[1].Password)
			out, err := wally.kubectl(ctx, "get", "pods", "-n", "kube-system")
			if err == nil || !strings.Contains(err.Error(), rejection) {
				t.Errorf("kubectl as wally: %v\n%s; want a failure saying %q", err, out, rejection)
			}
			return ctx
		}).
		Assess("a user deleted upstream cannot refresh and must log in again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := directory.DeleteUser(ctx, "pinny"); err != nil {
				t.Fatal(err)
			}
			expectLoginAgain(ctx, t, pinny, "cli_password")
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestSupervisorActiveDirectoryLogin: Active Directory (Samba) behind the Supervisor with the
// CLI password flow, nested groups included; a disabled account cannot refresh.
func TestSupervisorActiveDirectoryLogin(t *testing.T) {
	var (
		fl    *federatedLogin
		dc    *activedirectory.AD
		pinny cliUser
	)
	pinnyUser := activedirectory.DefaultUsers[0] // group seals, nested in marine-mammals
	f := features.New("Active Directory through the Supervisor").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !steps.ClusterFrom(ctx).Info.ChangesHost {
				t.Skip(steps.ActiveDirectoryHostOnly)
			}
			host := supervisorHost(ctx, t, cfg)
			var err error
			if dc, err = activedirectory.Start(ctx, activedirectory.Options{ListenIP: hostIP(t)}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = dc.Close() })
			// Everything else is Active Directory's defaults.
			idp := &idpv1alpha1.ActiveDirectoryIdentityProvider{
				TypeMeta:   idpTypeMeta("ActiveDirectoryIdentityProvider"),
				ObjectMeta: metav1.ObjectMeta{Name: "ad", Namespace: underTest(ctx).Supervisor.Namespace},
				Spec: idpv1alpha1.ActiveDirectoryIdentityProviderSpec{
					Host: dc.LDAPSAddress,
					TLS:  &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(dc.CABundle)},
					Bind: idpv1alpha1.ActiveDirectoryIdentityProviderBind{SecretName: "ad-bind"},
				},
			}
			createIDP(ctx, t, cfg, "activedirectoryidentityprovider/ad", idp, secret(ctx, "ad-bind", corev1.SecretTypeBasicAuth,
				map[string]string{corev1.BasicAuthUsernameKey: dc.BindDN, corev1.BasicAuthPasswordKey: dc.BindPassword}))
			fl = federate(ctx, t, cfg, host, "ad", federationIDP("ad", "ActiveDirectoryIdentityProvider", "ad", ""))
			bindGroup(ctx, t, cfg, "e2e-supervisor-ad-seals", "seals@"+activedirectory.Domain)
			pinny = fl.user(ctx, t, "ad", "cli_password", "PINNIPED_USERNAME="+pinnyUser.SAMAccountName, "PINNIPED_PASSWORD="+pinnyUser.Password)
			return ctx
		}).
		Assess("kubectl logs in with the CLI password flow", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			began := time.Now()
			eventually(ctx, t, func() error { _, err := pinny.kubectl(ctx, "get", "pods", "-n", "kube-system"); return err })
			t.Logf("first kubectl, CLI password login included: %s", time.Since(began).Round(time.Millisecond))
			expectWhoami(ctx, t, pinny, "username: pinny@"+activedirectory.Domain, "- seals@"+activedirectory.Domain,
				"- marine-mammals@"+activedirectory.Domain)
			return ctx
		}).
		Assess("a disabled account cannot refresh and must log in again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := dc.Disable(ctx, pinnyUser.SAMAccountName); err != nil {
				t.Fatal(err)
			}
			expectLoginAgain(ctx, t, pinny, "cli_password")
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestSupervisorGitHubLogin: the GitHub double behind the Supervisor, in a browser where the user
// is already signed in to GitHub; teams of the allowed organisation become groups. Where the
// double runs in the cluster, the browser reaches it by its Service's name through the run's
// tunnel proxy, as it reaches the Supervisor.
func TestSupervisorGitHubLogin(t *testing.T) {
	var (
		fl       *federatedLogin
		chromium *browser.Browser
	)
	f := features.New("GitHub through the Supervisor").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			host := supervisorHost(ctx, t, cfg)
			gh, err := steps.StartGitHubForCluster(ctx, issuerURL(host, "github")+supervisorCallbackPath, github.DefaultUser.Login)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = gh.Close() })
			idp := &idpv1alpha1.GitHubIdentityProvider{
				TypeMeta:   idpTypeMeta("GitHubIdentityProvider"),
				ObjectMeta: metav1.ObjectMeta{Name: "github", Namespace: underTest(ctx).Supervisor.Namespace},
				Spec: idpv1alpha1.GitHubIdentityProviderSpec{
					GitHubAPI: idpv1alpha1.GitHubAPIConfig{Host: ptr.To(gh.Host),
						TLS: &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(gh.CABundle)}},
					Claims: idpv1alpha1.GitHubClaims{Username: ptr.To(idpv1alpha1.GitHubUsernameLogin), Groups: ptr.To(idpv1alpha1.GitHubGroupNameSlug)},
					AllowAuthentication: idpv1alpha1.GitHubAllowAuthenticationSpec{Organizations: idpv1alpha1.GitHubOrganizationsSpec{
						Policy:  ptr.To(idpv1alpha1.GitHubAllowedAuthOrganizationsPolicyOnlyUsersFromAllowedOrganizations),
						Allowed: []string{"seals"},
					}},
					Client: idpv1alpha1.GitHubClientSpec{SecretName: "github-client"},
				},
			}
			createIDP(ctx, t, cfg, "githubidentityprovider/github", idp, secret(ctx, "github-client", "secrets.pinniped.dev/github-client",
				map[string]string{"clientID": github.DefaultClientID, "clientSecret": github.DefaultClientSecret}))
			fl = federate(ctx, t, cfg, host, "github", federationIDP("github", "GitHubIdentityProvider", "github", ""))
			bindGroup(ctx, t, cfg, "e2e-supervisor-github-seals", "seals/harbor-seals")
			chromium = fl.browser(ctx, t, gh.CABundle)
			return ctx
		}).
		Assess("kubectl logs in through GitHub in the browser", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			u := fl.user(ctx, t, "github", "browser_authcode")
			began := time.Now()
			if out, err := u.kubectlWithBrowserLogin(ctx, t, chromium, browser.Login{NoForm: true}, "get", "pods", "-n", "kube-system"); err != nil {
				t.Fatalf("kubectl: %v\n%s", err, out)
			}
			t.Logf("first kubectl, browser login included: %s", time.Since(began).Round(time.Millisecond))
			out := expectWhoami(ctx, t, u, "username: "+github.DefaultUser.Login, "- seals/harbor-seals")
			if strings.Contains(out, "walruses/") {
				t.Errorf("whoami shows a team of an organisation that is not allowed:\n%s", out)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// TestSupervisorDexLogin: Dex (OIDC) behind the Supervisor, its form completed in a browser; the
// ID token the CLI gets for this cluster's audience is refused by an authenticator of another
// audience. Two JWTAuthenticators of one Concierge stand for the Concierges of two clusters:
// each checks the audience the same way.
func TestSupervisorDexLogin(t *testing.T) {
	var (
		fl       *federatedLogin
		chromium *browser.Browser
		user     cliUser
	)
	f := features.New("Dex through the Supervisor, one audience per cluster").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var idp *dex.Dex
			fl, idp = federateDex(ctx, t, cfg, "dex")
			user = fl.user(ctx, t, "dex", "browser_authcode")
			chromium = fl.browser(ctx, t, idp.CABundle)
			return ctx
		}).
		Assess("kubectl logs in through Dex in the browser", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			began := time.Now()
			if out, err := user.kubectlWithBrowserLogin(ctx, t, chromium, dexLogin(dex.DefaultUser), "get", "pods", "-n", "kube-system"); err != nil {
				t.Fatalf("kubectl: %v\n%s", err, out)
			}
			t.Logf("first kubectl, browser login included: %s", time.Since(began).Round(time.Millisecond))
			out, stderr, err := user.kubectlOutput(ctx, "get", "pods", "-n", "kube-system")
			if err != nil || strings.Contains(stderr, "https://") {
				t.Fatalf("second kubectl should need no login: %v\n%s%s", err, out, stderr)
			}
			expectWhoami(ctx, t, user, "username: "+dex.DefaultUser.Email, "- seals")
			return ctx
		}).
		Assess("this cluster's token is refused where another audience is expected", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			fl.trustFrom(ctx, t, "dex-other-cluster", "dex-other-cluster")
			if proxyServes(steps.ClusterFrom(ctx).Info) {
				waitForStrategy(ctx, t, cfg, configv1alpha1.StrategyTypeImpersonationProxy)
			}
			token := clusterToken(ctx, t, user)
			if resp := kubectlExchange(ctx, t, cfg, token, "JWTAuthenticator", "dex"); resp.Status.Credential == nil {
				t.Fatalf("this cluster's authenticator refused the token: %v", ptr.Deref(resp.Status.Message, ""))
			}
			resp := kubectlExchange(ctx, t, cfg, token, "JWTAuthenticator", "dex-other-cluster")
			if resp.Status.Credential != nil || ptr.Deref(resp.Status.Message, "") != "authentication failed" {
				t.Errorf("the other audience's authenticator: %+v, want the uniform authentication failure", resp.Status)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// federateLDAP federates the directory, reached at address, through the Supervisor under name
// (the LDAPIdentityProvider, its bind Secret, the FederationDomain and the JWTAuthenticator are
// all called name; the group seals may view the cluster), and returns the login with pinny logged
// in by the CLI password flow.
func federateLDAP(ctx context.Context, t *testing.T, cfg *envconf.Config, name, address string, directory *ldap.LDAP) (*federatedLogin, cliUser) {
	t.Helper()
	host := supervisorHost(ctx, t, cfg)
	createLDAPIDP(ctx, t, cfg, name, address, directory)
	fl := federate(ctx, t, cfg, host, name, federationIDP(name, "LDAPIdentityProvider", name, ""))
	bindGroup(ctx, t, cfg, "e2e-supervisor-"+name+"-seals", "seals")
	pinny := fl.user(ctx, t, name, "cli_password", "PINNIPED_USERNAME=pinny", "PINNIPED_PASSWORD="+ldap.DefaultUsers[0].Password)
	eventually(ctx, t, func() error { _, err := pinny.kubectl(ctx, "get", "pods", "-n", "kube-system"); return err })
	return fl, pinny
}

// createLDAPIDP creates the LDAPIdentityProvider name (and its bind Secret name-bind) for the
// directory, reached at address, and waits until it is Ready.
func createLDAPIDP(ctx context.Context, t *testing.T, cfg *envconf.Config, name, address string, directory *ldap.LDAP) {
	t.Helper()
	idp := &idpv1alpha1.LDAPIdentityProvider{
		TypeMeta:   idpTypeMeta("LDAPIdentityProvider"),
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: underTest(ctx).Supervisor.Namespace},
		Spec: idpv1alpha1.LDAPIdentityProviderSpec{
			Host: address,
			TLS:  &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(directory.CABundle)},
			Bind: idpv1alpha1.LDAPIdentityProviderBind{SecretName: name + "-bind"},
			UserSearch: idpv1alpha1.LDAPIdentityProviderUserSearch{Base: ldap.UsersBaseDN, Filter: "uid={}",
				Attributes: idpv1alpha1.LDAPIdentityProviderUserSearchAttributes{Username: "uid", UID: "entryUUID"}},
			GroupSearch: idpv1alpha1.LDAPIdentityProviderGroupSearch{Base: ldap.GroupsBaseDN, Filter: "member={}",
				Attributes: idpv1alpha1.LDAPIdentityProviderGroupSearchAttributes{GroupName: "cn"}},
		},
	}
	createIDP(ctx, t, cfg, "ldapidentityprovider/"+name, idp, secret(ctx, name+"-bind", corev1.SecretTypeBasicAuth,
		map[string]string{corev1.BasicAuthUsernameKey: directory.BindDN, corev1.BasicAuthPasswordKey: directory.BindPassword}))
}

// federateDex starts Dex with dex.DefaultUser where the Supervisor reaches it (on this machine, or
// in the cluster, tunnelled by the run's proxy as the Supervisor is), and federates it through
// the Supervisor under name: the OIDCIdentityProvider, its client Secret, the FederationDomain and the
// JWTAuthenticator are all called name, and the group seals may view the cluster.
func federateDex(ctx context.Context, t *testing.T, cfg *envconf.Config, name string) (*federatedLogin, *dex.Dex) {
	t.Helper()
	host := supervisorHost(ctx, t, cfg)
	idp := startDexIDP(ctx, t, cfg, host, name, name)
	fl := federate(ctx, t, cfg, host, name, federationIDP(name, "OIDCIdentityProvider", name, ""))
	bindGroup(ctx, t, cfg, "e2e-supervisor-"+name+"-seals", "seals")
	return fl, idp
}

// startDexIDP starts Dex with dex.DefaultUser where the Supervisor reaches it, its client
// redirecting to the FederationDomain fdName at host, and creates the OIDCIdentityProvider name
// (and its client Secret name-client) for it, Ready.
func startDexIDP(ctx context.Context, t *testing.T, cfg *envconf.Config, host, fdName, name string) *dex.Dex {
	t.Helper()
	idp, err := steps.StartDexForCluster(ctx, []dex.User{dex.DefaultUser}, dex.Client{ID: "supervisor", Secret: "supervisor-secret",
		RedirectURIs: []string{issuerURL(host, fdName) + supervisorCallbackPath}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idp.Close() })
	upstream := &idpv1alpha1.OIDCIdentityProvider{
		TypeMeta:   idpTypeMeta("OIDCIdentityProvider"),
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: underTest(ctx).Supervisor.Namespace},
		Spec: idpv1alpha1.OIDCIdentityProviderSpec{
			Issuer:              idp.IssuerURL,
			TLS:                 &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(idp.CABundle)},
			AuthorizationConfig: idpv1alpha1.OIDCAuthorizationConfig{AdditionalScopes: []string{"offline_access", "email", "groups"}},
			Claims:              idpv1alpha1.OIDCClaims{Username: "email", Groups: "groups"},
			Client:              idpv1alpha1.OIDCClientCredentials{SecretName: name + "-client"},
		},
	}
	createIDP(ctx, t, cfg, "oidcidentityprovider/"+name, upstream, secret(ctx, name+"-client", "secrets.pinniped.dev/oidc-client",
		map[string]string{"clientID": "supervisor", "clientSecret": "supervisor-secret"}))
	return idp
}

// expectWhoami runs `pinniped whoami` as u and checks that its YAML holds every line of want.
func expectWhoami(ctx context.Context, t *testing.T, u cliUser, want ...string) string {
	t.Helper()
	out, err := u.whoami(ctx)
	if err != nil {
		t.Fatalf("whoami: %v\n%s", err, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("whoami lacks %q:\n%s", w, out)
		}
	}
	return out
}

// refreshAndRun ages u's cached certificate and tokens, as minutes of waiting would, runs
// kubectl, and returns its stderr: the plugin must refresh the session with the Supervisor.
func refreshAndRun(ctx context.Context, t *testing.T, u cliUser) string {
	t.Helper()
	u.expireCachedCredentials(t)
	u.expireSessions(t)
	out, stderr, err := u.kubectlOutput(ctx, "get", "pods", "-n", "kube-system")
	if err != nil {
		t.Fatalf("kubectl after the tokens expired: %v\n%s%s", err, out, stderr)
	}
	return stderr
}

// expectLoginAgain checks that once u's certificate and tokens expired the refresh fails and the
// plugin starts a new login with flow, which fails too (the user is gone upstream).
func expectLoginAgain(ctx context.Context, t *testing.T, u cliUser, flow string) {
	t.Helper()
	u.expireCachedCredentials(t)
	u.expireSessions(t)
	out, stderr, err := u.kubectlOutput(ctx, "get", "pods", "-n", "kube-system")
	if err == nil {
		t.Fatalf("kubectl still works:\n%s", out)
	}
	if !strings.Contains(stderr, "refreshing the session failed") || !strings.Contains(stderr, "logging in with the "+flow+" flow") {
		t.Errorf("kubectl: %v\n%s; want a failed refresh, then a new login", err, stderr)
	}
}

// clusterToken runs u's login plugin without its Concierge flags, from u's session cache, and
// returns the ID token it gets for the cluster's audience.
func clusterToken(ctx context.Context, t *testing.T, u cliUser) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(u.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, a := range kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].Exec.Args {
		if !strings.HasPrefix(a, "--concierge-") && !strings.HasPrefix(a, "--enable-concierge") && !strings.HasPrefix(a, "--credential-cache") {
			args = append(args, a)
		}
	}
	cmd := exec.CommandContext(ctx, u.cli, args...)
	cmd.Env = u.env()
	out, err := cmd.Output()
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		t.Fatalf("pinniped login oidc: %v\n%s", err, exit.Stderr)
	} else if err != nil {
		t.Fatal(err)
	}
	var cred clientauthv1.ExecCredential
	if err := json.Unmarshal(out, &cred); err != nil || cred.Status == nil || cred.Status.Token == "" {
		t.Fatalf("no token in %s (%v)", out, err)
	}
	return cred.Status.Token
}
