package kubeconfig

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	kubetesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sealion.dev/cli/internal/deps"
	"sealion.dev/cli/internal/testing/fakeissuer"
	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	conciergefake "sealion.dev/core/generated/concierge/clientset/versioned/fake"
	"sealion.dev/core/testing/oidcissuer"
)

const (
	clusterServer = "https://cluster.example:6443"
	tcrServer     = "https://tcr.example:443"
	proxyEndpoint = "https://proxy.example"
)

var (
	clusterCA = []byte("CLUSTER-CA")
	tcrCA     = []byte("TCR-CA")
	proxyCA   = []byte("PROXY-CA")
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func writeKubeconfig(t *testing.T, server string, ca []byte) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "admin-token"}
	cfg.Contexts["kind-pinniped"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "admin", Namespace: "apps"}
	cfg.CurrentContext = "kind-pinniped"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func credentialIssuerWith(name string, strategies ...configv1alpha1.CredentialIssuerStrategy) *configv1alpha1.CredentialIssuer {
	return &configv1alpha1.CredentialIssuer{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: configv1alpha1.CredentialIssuerStatus{Strategies: strategies}}
}

var (
	tcrStrategy = configv1alpha1.CredentialIssuerStrategy{
		Type: configv1alpha1.StrategyTypeKubeClusterSigningCertificate, Status: configv1alpha1.StrategyStatusSuccess, Reason: configv1alpha1.StrategyReasonFetchedKey,
		Frontend: &configv1alpha1.CredentialIssuerFrontend{Type: configv1alpha1.FrontendTypeTokenCredentialRequestAPI,
			TokenCredentialRequestAPIInfo: &configv1alpha1.TokenCredentialRequestAPIInfo{Server: tcrServer, CertificateAuthorityData: b64(tcrCA)}},
	}
	proxyStrategy = configv1alpha1.CredentialIssuerStrategy{
		Type: configv1alpha1.StrategyTypeImpersonationProxy, Status: configv1alpha1.StrategyStatusSuccess, Reason: configv1alpha1.StrategyReasonListening,
		Frontend: &configv1alpha1.CredentialIssuerFrontend{Type: configv1alpha1.FrontendTypeImpersonationProxy,
			ImpersonationProxyInfo: &configv1alpha1.ImpersonationProxyInfo{Endpoint: proxyEndpoint, CertificateAuthorityData: b64(proxyCA)}},
	}
	pendingProxy = configv1alpha1.CredentialIssuerStrategy{
		Type: configv1alpha1.StrategyTypeImpersonationProxy, Status: configv1alpha1.StrategyStatusError, Reason: configv1alpha1.StrategyReasonPending, Message: "waiting for load balancer",
	}
	// noClusterInfo is how the strategy fails where kube-public/cluster-info does not exist (Talos).
	noClusterInfo = configv1alpha1.CredentialIssuerStrategy{
		Type: configv1alpha1.StrategyTypeKubeClusterSigningCertificate, Status: configv1alpha1.StrategyStatusError, Reason: configv1alpha1.StrategyReasonCouldNotGetClusterInfo,
		Message: "failed to get kube-public/cluster-info configmap",
	}
	proxyWithoutInfo = configv1alpha1.CredentialIssuerStrategy{
		Type: configv1alpha1.StrategyTypeImpersonationProxy, Status: configv1alpha1.StrategyStatusSuccess, Reason: configv1alpha1.StrategyReasonListening,
		Frontend: &configv1alpha1.CredentialIssuerFrontend{Type: configv1alpha1.FrontendTypeImpersonationProxy},
	}
	failedKey = configv1alpha1.CredentialIssuerStrategy{
		Type: configv1alpha1.StrategyTypeKubeClusterSigningCertificate, Status: configv1alpha1.StrategyStatusError, Reason: configv1alpha1.StrategyReasonCouldNotFetchKey, Message: "no controller manager",
	}
)

var (
	webhook = &authv1alpha1.WebhookAuthenticator{ObjectMeta: metav1.ObjectMeta{Name: "hook"}, Spec: authv1alpha1.WebhookAuthenticatorSpec{Endpoint: "https://hook.example"}}
	jwt     = &authv1alpha1.JWTAuthenticator{ObjectMeta: metav1.ObjectMeta{Name: "jwt"}, Spec: authv1alpha1.JWTAuthenticatorSpec{
		Issuer: "https://issuer.example", Audience: "cluster-1", TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64([]byte("ISSUER-CA"))}}}
)

// jwtFor is a JWTAuthenticator for iss with audience cluster-1.
func jwtFor(iss *fakeissuer.Issuer) *authv1alpha1.JWTAuthenticator {
	return &authv1alpha1.JWTAuthenticator{ObjectMeta: metav1.ObjectMeta{Name: "jwt"}, Spec: authv1alpha1.JWTAuthenticatorSpec{
		Issuer: iss.URL, Audience: "cluster-1", TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(iss.CABundle)}}}
}

func TestRun(t *testing.T) {
	plain := fakeissuer.New(t, fakeissuer.Options{})
	sup := fakeissuer.New(t, fakeissuer.Options{Supervisor: true, IdentityProviders: []fakeissuer.IdentityProvider{
		{Name: "my-ldap", Type: "ldap", Flows: []string{"cli_password", "browser_authcode"}}}})
	supDevice := fakeissuer.New(t, fakeissuer.Options{Supervisor: true, Device: true, IdentityProviders: []fakeissuer.IdentityProvider{
		{Name: "my-oidc", Type: "oidc", Flows: []string{"browser_authcode"}},
	}})
	sup2 := fakeissuer.New(t, fakeissuer.Options{Supervisor: true, IdentityProviders: []fakeissuer.IdentityProvider{
		{Name: "my-ldap", Type: "ldap", Flows: []string{"cli_password", "browser_authcode"}},
		{Name: "my-github", Type: "github", Flows: []string{"browser_authcode"}}}})
	gone := fakeissuer.New(t, fakeissuer.Options{})
	gone.Close()
	plainCAFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(plainCAFile, plain.CABundle, 0o600); err != nil {
		t.Fatal(err)
	}
	publicCA := []byte("PUBLIC-CA\n")
	publicCAFile := writeFile(t, publicCA)
	const publicServer = "https://public.example:6443"
	// concierge is what Pinniped's CLI writes right after "login static" or "login oidc".
	concierge := func(authType, name, endpoint string, ca []byte) []string {
		return []string{"--enable-concierge", "--concierge-api-group-suffix=pinniped.dev", "--concierge-authenticator-name=" + name,
			"--concierge-authenticator-type=" + authType, "--concierge-endpoint=" + endpoint, "--concierge-ca-bundle-data=" + b64(ca)}
	}
	login := func(command string, parts ...[]string) []string {
		return slices.Concat(append([][]string{{"login", command}}, parts...)...)
	}
	tests := []struct {
		name       string
		objects    []runtime.Object
		args       []string
		wantErr    string
		wantServer string
		wantCA     []byte
		wantArgs   []string
		wantStderr string
	}{
		{
			name:       "TokenCredentialRequest API through the kubeconfig's server, not the advertised in-cluster address",
			objects:    []runtime.Object{credentialIssuerWith("ci", tcrStrategy, proxyStrategy), webhook},
			args:       []string{"--static-token=s3cret"},
			wantServer: clusterServer, wantCA: clusterCA,
			wantArgs: login("static", concierge("webhook", "hook", clusterServer, clusterCA), []string{"--token=s3cret"}),
		},
		{
			name:    "endpoint and CA given by flag win in TokenCredentialRequest mode",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), webhook},
			args:    []string{"--static-token=t", "--concierge-endpoint=" + publicServer, "--concierge-ca-bundle=" + publicCAFile},
			// kubectl goes where the Concierge is: the API server at the given address.
			wantServer: publicServer, wantCA: publicCA,
			wantArgs: login("static", concierge("webhook", "hook", publicServer, publicCA), []string{"--token=t"}),
		},
		{
			name:       "impersonation proxy chosen by --concierge-mode",
			objects:    []runtime.Object{credentialIssuerWith("ci", tcrStrategy, proxyStrategy), webhook},
			args:       []string{"--static-token-env=TOKEN", "--concierge-mode=ImpersonationProxy", "--credential-cache=/tmp/c.yaml"},
			wantServer: proxyEndpoint, wantCA: proxyCA,
			wantArgs: login("static", concierge("webhook", "hook", proxyEndpoint, proxyCA), []string{"--credential-cache=/tmp/c.yaml", "--token-env=TOKEN"}),
		},
		{
			name:       "credential cache turned off is passed through",
			objects:    []runtime.Object{credentialIssuerWith("ci", tcrStrategy), webhook},
			args:       []string{"--static-token=t", "--credential-cache="},
			wantServer: clusterServer, wantCA: clusterCA,
			wantArgs: login("static", concierge("webhook", "hook", clusterServer, clusterCA), []string{"--credential-cache=", "--token=t"}),
		},
		{
			name:       "impersonation proxy when the signing key is unavailable",
			objects:    []runtime.Object{credentialIssuerWith("ci", failedKey, proxyStrategy), webhook},
			args:       []string{"--static-token=t"},
			wantServer: proxyEndpoint, wantCA: proxyCA,
			wantArgs: login("static", concierge("webhook", "hook", proxyEndpoint, proxyCA), []string{"--token=t"}),
		},
		{
			name:       "endpoint and CA given by flag win over the advertised impersonation proxy",
			objects:    []runtime.Object{credentialIssuerWith("ci", failedKey, proxyStrategy), webhook},
			args:       []string{"--static-token=t", "--concierge-endpoint=" + publicServer, "--concierge-ca-bundle=" + publicCAFile},
			wantServer: publicServer, wantCA: publicCA,
			wantArgs: login("static", concierge("webhook", "hook", publicServer, publicCA), []string{"--token=t"}),
		},
		{
			name:    "impersonation proxy that advertises no endpoint",
			objects: []runtime.Object{credentialIssuerWith("ci", proxyWithoutInfo), webhook},
			args:    []string{"--static-token=t"},
			wantErr: "CredentialIssuer ci advertises no impersonation proxy endpoint: pass --concierge-endpoint",
		},
		{
			name:    "no cluster-info: mode, endpoint and CA given by flag need no successful strategy",
			objects: []runtime.Object{credentialIssuerWith("ci", noClusterInfo), webhook},
			args: []string{"--static-token=t", "--concierge-mode=TokenCredentialRequestAPI", "--concierge-endpoint=" + publicServer,
				"--concierge-ca-bundle=" + publicCAFile},
			wantServer: publicServer, wantCA: publicCA,
			wantArgs: login("static", concierge("webhook", "hook", publicServer, publicCA), []string{"--token=t"}),
			wantStderr: "warning: CredentialIssuer ci does not have a successful strategy with frontend TokenCredentialRequestAPI " +
				"(KubeClusterSigningCertificate: Error/CouldNotGetClusterInfo: failed to get kube-public/cluster-info configmap): " +
				"using --concierge-mode TokenCredentialRequestAPI with the endpoint and CA bundle given by flag",
		},
		{
			name:       "no cluster-info: --concierge-mode TokenCredentialRequestAPI alone takes the kubeconfig's server and CA",
			objects:    []runtime.Object{credentialIssuerWith("ci", noClusterInfo), webhook},
			args:       []string{"--static-token=t", "--concierge-mode=TokenCredentialRequestAPI"},
			wantServer: clusterServer, wantCA: clusterCA,
			wantArgs:   login("static", concierge("webhook", "hook", clusterServer, clusterCA), []string{"--token=t"}),
			wantStderr: "using --concierge-mode TokenCredentialRequestAPI with the endpoint and CA bundle of the kubeconfig's cluster",
		},
		{
			name:    "no cluster-info: without --concierge-mode a successful strategy is needed",
			objects: []runtime.Object{credentialIssuerWith("ci", noClusterInfo), webhook},
			args:    []string{"--static-token=t", "--concierge-endpoint=" + publicServer, "--concierge-ca-bundle=" + publicCAFile},
			wantErr: "CredentialIssuer ci does not have any successful strategy (KubeClusterSigningCertificate: Error/CouldNotGetClusterInfo: failed to get kube-public/cluster-info configmap)",
		},
		{
			name:       "impersonation proxy mode, endpoint and CA given by flag need no successful strategy",
			objects:    []runtime.Object{credentialIssuerWith("ci", noClusterInfo), webhook},
			args:       []string{"--static-token=t", "--concierge-mode=ImpersonationProxy", "--concierge-endpoint=" + publicServer, "--concierge-ca-bundle=" + publicCAFile},
			wantServer: publicServer, wantCA: publicCA,
			wantArgs:   login("static", concierge("webhook", "hook", publicServer, publicCA), []string{"--token=t"}),
			wantStderr: "warning: CredentialIssuer ci does not have a successful strategy with frontend ImpersonationProxy",
		},
		{
			name:    "impersonation proxy mode with only the endpoint by flag needs the strategy for the CA",
			objects: []runtime.Object{credentialIssuerWith("ci", noClusterInfo), webhook},
			args:    []string{"--static-token=t", "--concierge-mode=ImpersonationProxy", "--concierge-endpoint=" + publicServer},
			wantErr: "CredentialIssuer ci does not have a successful strategy with frontend ImpersonationProxy (KubeClusterSigningCertificate: Error/CouldNotGetClusterInfo",
		},
		{
			name:       "JWT authenticator of a Supervisor",
			objects:    []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwtFor(sup)},
			wantServer: clusterServer, wantCA: clusterCA,
			wantArgs: login("oidc", concierge("jwt", "jwt", clusterServer, clusterCA), []string{"--issuer=" + sup.URL, "--client-id=pinniped-cli",
				"--scopes=offline_access,openid,pinniped:request-audience,username,groups", "--ca-bundle-data=" + b64(sup.CABundle),
				"--request-audience=cluster-1", "--upstream-identity-provider-name=my-ldap", "--upstream-identity-provider-type=ldap"}),
		},
		{
			name:       "JWT authenticator of another issuer",
			objects:    []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwtFor(plain)},
			wantServer: clusterServer, wantCA: clusterCA,
			wantArgs: login("oidc", concierge("jwt", "jwt", clusterServer, clusterCA), []string{"--issuer=" + plain.URL, "--client-id=pinniped-cli",
				"--scopes=offline_access,openid,email,profile,groups", "--ca-bundle-data=" + b64(plain.CABundle)}),
		},
		{
			name:    "named authenticator and OIDC overrides",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwtFor(plain), webhook},
			args: []string{"--concierge-authenticator-type=jwt", "--concierge-authenticator-name=jwt", "--oidc-client-id=other", "--oidc-scopes=openid",
				"--oidc-request-audience=aud2", "--oidc-skip-browser", "--oidc-listen-port=48095", "--concierge-endpoint=https://override.example"},
			wantServer: "https://override.example", wantCA: clusterCA,
			wantArgs: login("oidc", concierge("jwt", "jwt", "https://override.example", clusterCA), []string{"--issuer=" + plain.URL, "--client-id=other",
				"--scopes=openid", "--skip-browser", "--listen-port=48095", "--ca-bundle-data=" + b64(plain.CABundle), "--request-audience=aud2"}),
		},
		{
			name:       "Supervisor identity provider and flow chosen",
			objects:    []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwtFor(sup2)},
			args:       []string{"--upstream-identity-provider-name=my-ldap", "--upstream-identity-provider-flow=cli_password", "--oidc-session-cache=/tmp/s.yaml"},
			wantServer: clusterServer, wantCA: clusterCA,
			wantArgs: login("oidc", concierge("jwt", "jwt", clusterServer, clusterCA), []string{"--issuer=" + sup2.URL, "--client-id=pinniped-cli",
				"--scopes=offline_access,openid,pinniped:request-audience,username,groups", "--ca-bundle-data=" + b64(sup2.CABundle),
				"--session-cache=/tmp/s.yaml", "--request-audience=cluster-1", "--upstream-identity-provider-name=my-ldap",
				"--upstream-identity-provider-type=ldap", "--upstream-identity-provider-flow=cli_password"}),
		},
		{
			name:       "device flow",
			objects:    []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwtFor(supDevice)},
			args:       []string{"--oidc-flow=device"},
			wantServer: clusterServer, wantCA: clusterCA,
			wantArgs: login("oidc", concierge("jwt", "jwt", clusterServer, clusterCA), []string{"--issuer=" + supDevice.URL, "--client-id=pinniped-cli",
				"--scopes=offline_access,openid,pinniped:request-audience,username,groups", "--ca-bundle-data=" + b64(supDevice.CABundle),
				"--request-audience=cluster-1", "--upstream-identity-provider-name=my-oidc", "--upstream-identity-provider-type=oidc", "--flow=device"}),
		},
		{
			name:    "device flow at an issuer without it",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwtFor(sup)},
			args:    []string{"--oidc-flow=device"},
			wantErr: "--oidc-flow=device: " + sup.URL + " offers no device authorization endpoint",
		},
		{
			name:    "device flow with the cli_password flow",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwtFor(supDevice)},
			args:    []string{"--oidc-flow=device", "--upstream-identity-provider-flow=cli_password"},
			wantErr: "--oidc-flow=device logs in through a browser: it cannot use --upstream-identity-provider-flow=cli_password",
		},
		{
			name:    "unknown flow",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwtFor(supDevice)},
			args:    []string{"--oidc-flow=pigeon"},
			wantErr: `invalid --oidc-flow "pigeon": must be browser or device`,
		},
		{
			name:    "Supervisor with several identity providers",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwtFor(sup2)},
			wantErr: `has several identity providers ("my-ldap" (ldap), "my-github" (github)): choose one with --upstream-identity-provider-name`,
		},
		{
			name:    "flow the identity provider lacks",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwtFor(sup2)},
			args:    []string{"--upstream-identity-provider-name=my-github", "--upstream-identity-provider-flow=cli_password"},
			wantErr: `identity provider "my-github" supports the login flows browser_authcode, not cli_password`,
		},
		{
			name:    "identity provider at another issuer",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwtFor(plain)},
			args:    []string{"--upstream-identity-provider-name=x"},
			wantErr: "the --upstream-identity-provider-* flags are for Pinniped Supervisors",
		},
		{
			name:    "issuer unreachable",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwtFor(gone)},
			wantErr: "the issuer is unreachable from this machine",
		},
		{
			name:    "issuer CA unknown",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwtFor(plain)},
			args:    []string{"--oidc-ca-bundle=" + writeFile(t, oidcissuer.New(t).CABundle)}, // another CA
			wantErr: "(pass the issuer's CA bundle with --oidc-ca-bundle)",
		},
		{
			name:       "no Concierge",
			args:       []string{"--no-concierge", "--oidc-issuer=" + plain.URL, "--oidc-ca-bundle=" + plainCAFile},
			wantServer: clusterServer, wantCA: clusterCA,
			wantArgs: []string{"login", "oidc", "--issuer=" + plain.URL, "--client-id=pinniped-cli", "--scopes=offline_access,openid,email,profile,groups",
				"--ca-bundle-data=" + b64(plain.CABundle)},
		},
		{
			name: "hidden debugging flags passed through, deprecated namespace ignored",
			args: []string{"--no-concierge", "--oidc-issuer=" + plain.URL, "--oidc-ca-bundle=" + plainCAFile,
				"--oidc-skip-listen", "--oidc-debug-session-cache", "--oidc-session-cache=/tmp/s.yaml", "--concierge-namespace=old"},
			wantServer: clusterServer, wantCA: clusterCA,
			wantArgs: []string{"login", "oidc", "--issuer=" + plain.URL, "--client-id=pinniped-cli", "--scopes=offline_access,openid,email,profile,groups",
				"--skip-listen", "--ca-bundle-data=" + b64(plain.CABundle), "--session-cache=/tmp/s.yaml", "--debug-session-cache"},
			wantStderr: "Flag --concierge-namespace has been deprecated",
		},
		{name: "no CredentialIssuer", objects: []runtime.Object{webhook}, args: []string{"--static-token=t"}, wantErr: "no CredentialIssuers were found"},
		{
			name:    "several CredentialIssuers",
			objects: []runtime.Object{credentialIssuerWith("a", tcrStrategy), credentialIssuerWith("b", tcrStrategy), webhook}, args: []string{"--static-token=t"},
			wantErr: "several CredentialIssuers were found (a, b): choose one with --concierge-credential-issuer",
		},
		{
			name:       "one of several CredentialIssuers chosen",
			objects:    []runtime.Object{credentialIssuerWith("a", failedKey), credentialIssuerWith("b", tcrStrategy), webhook},
			args:       []string{"--static-token=t", "--concierge-credential-issuer=b"},
			wantServer: clusterServer, wantCA: clusterCA,
			wantArgs: login("static", concierge("webhook", "hook", clusterServer, clusterCA), []string{"--token=t"}),
		},
		{
			name:    "no working strategy",
			objects: []runtime.Object{credentialIssuerWith("ci", failedKey), webhook}, args: []string{"--static-token=t"},
			wantErr: "CredentialIssuer ci does not have any successful strategy (KubeClusterSigningCertificate: Error/CouldNotFetchKey: no controller manager)",
		},
		{
			name:    "requested mode unavailable",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), webhook}, args: []string{"--static-token=t", "--concierge-mode=ImpersonationProxy"},
			wantErr: "does not have a successful strategy with frontend ImpersonationProxy",
		},
		{
			name:    "pending strategy skipped",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy, pendingProxy), webhook}, args: []string{"--static-token=t", "--concierge-skip-wait"},
			wantServer: clusterServer, wantCA: clusterCA,
			wantArgs: login("static", concierge("webhook", "hook", clusterServer, clusterCA), []string{"--token=t"}),
		},
		{
			name:       "pending strategy not waited for when the flags say everything",
			objects:    []runtime.Object{credentialIssuerWith("ci", noClusterInfo, pendingProxy), webhook},
			args:       []string{"--static-token=t", "--concierge-mode=TokenCredentialRequestAPI", "--timeout=50ms"},
			wantServer: clusterServer, wantCA: clusterCA,
			wantArgs: login("static", concierge("webhook", "hook", clusterServer, clusterCA), []string{"--token=t"}),
		},
		{
			name:    "pending strategy waited for until the timeout",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy, pendingProxy), webhook}, args: []string{"--static-token=t", "--timeout=50ms"},
			wantErr: "CredentialIssuer ci still has pending strategies",
		},
		{name: "no authenticator", objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy)}, args: []string{"--static-token=t"}, wantErr: "no authenticators were found"},
		{
			name:    "several authenticators",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwt, webhook}, args: []string{"--static-token=t"},
			wantErr: "several authenticators were found: choose one with",
		},
		{
			name:    "named authenticator missing",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), jwt}, args: []string{"--static-token=t", "--concierge-authenticator-name=other"},
			wantErr: "no authenticators were found with name other",
		},
		{
			name:    "webhook without a static token",
			objects: []runtime.Object{credentialIssuerWith("ci", tcrStrategy), webhook},
			wantErr: "WebhookAuthenticator hook accepts static tokens only",
		},
		{name: "bad mode", args: []string{"--concierge-mode=Magic"}, wantErr: `invalid --concierge-mode "Magic"`},
		{name: "bad authenticator type", args: []string{"--concierge-authenticator-type=ldap"}, wantErr: `invalid --concierge-authenticator-type "ldap"`},
		{name: "reserved audience", args: []string{"--oidc-request-audience=x.pinniped.dev"}, wantErr: `must not contain ".pinniped.dev"`},
		{name: "no issuer without the Concierge", args: []string{"--no-concierge"}, wantErr: "no OIDC issuer is known"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := conciergefake.NewSimpleClientset(tt.objects...)
			var out, errOut bytes.Buffer
			d := deps.Deps{
				Out: &out, ErrOut: &errOut,
				Executable:         func() (string, error) { return "/usr/local/bin/pinniped", nil },
				NewConciergeClient: func(*rest.Config) (deps.ConciergeClient, error) { return fake, nil },
			}
			args := append([]string{"--kubeconfig", writeKubeconfig(t, clusterServer, clusterCA), "--skip-validation"}, tt.args...)
			err := execute(d, args, time.Millisecond)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v (stderr %q)", err, errOut.String())
			}
			cfg, err := clientcmd.Load(out.Bytes())
			if err != nil {
				t.Fatalf("output is not a kubeconfig: %v\n%s", err, out.String())
			}
			const name = "kind-pinniped-pinniped"
			if cfg.CurrentContext != name {
				t.Errorf("current context %q, want %q", cfg.CurrentContext, name)
			}
			// Each entry is named after the admin kubeconfig's own, as Pinniped's CLI names them.
			ctx := cfg.Contexts[name]
			if ctx == nil || ctx.Cluster != "c-pinniped" || ctx.AuthInfo != "admin-pinniped" || ctx.Namespace != "apps" {
				t.Fatalf("context = %+v", ctx)
			}
			cluster := cfg.Clusters["c-pinniped"]
			if cluster.Server != tt.wantServer || !bytes.Equal(cluster.CertificateAuthorityData, tt.wantCA) {
				t.Errorf("cluster = %s %q, want %s %q", cluster.Server, cluster.CertificateAuthorityData, tt.wantServer, tt.wantCA)
			}
			exec := cfg.AuthInfos["admin-pinniped"].Exec
			if exec == nil || exec.APIVersion != "client.authentication.k8s.io/v1beta1" || exec.Command != "/usr/local/bin/pinniped" || !exec.ProvideClusterInfo || exec.InstallHint == "" {
				t.Fatalf("exec = %+v", exec)
			}
			if strings.Join(exec.Args, " ") != strings.Join(tt.wantArgs, " ") {
				t.Errorf("args:\n%s\nwant:\n%s", strings.Join(exec.Args, "\n"), strings.Join(tt.wantArgs, "\n"))
			}
			if !strings.Contains(errOut.String(), tt.wantStderr) {
				t.Errorf("stderr %q lacks %q", errOut.String(), tt.wantStderr)
			}
		})
	}
}

func TestRunWaitsForPendingStrategies(t *testing.T) {
	fake := conciergefake.NewSimpleClientset(credentialIssuerWith("ci", failedKey, pendingProxy), webhook)
	gets := 0
	fake.PrependReactor("get", "credentialissuers", func(kubetesting.Action) (bool, runtime.Object, error) {
		gets++
		if gets < 3 {
			return true, credentialIssuerWith("ci", failedKey, pendingProxy), nil
		}
		return true, credentialIssuerWith("ci", failedKey, proxyStrategy), nil
	})
	var out, errOut bytes.Buffer
	d := deps.Deps{
		Out: &out, ErrOut: &errOut,
		Executable:         func() (string, error) { return "pinniped", nil },
		NewConciergeClient: func(*rest.Config) (deps.ConciergeClient, error) { return fake, nil },
	}
	args := []string{"--kubeconfig", writeKubeconfig(t, clusterServer, clusterCA), "--skip-validation", "--static-token=t"}
	if err := execute(d, args, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if gets != 3 {
		t.Errorf("%d polls, want 3", gets)
	}
	if !strings.Contains(errOut.String(), "waiting for CredentialIssuer ci") {
		t.Errorf("stderr %q does not say it is waiting", errOut.String())
	}
	if !strings.Contains(out.String(), "server: "+proxyEndpoint) {
		t.Errorf("the kubeconfig does not use the proxy that became ready:\n%s", out.String())
	}
}

func TestRunValidatesAndWritesTheFile(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "anonymous", http.StatusUnauthorized) // refused, but reachable
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	fake := conciergefake.NewSimpleClientset(credentialIssuerWith("ci", configv1alpha1.CredentialIssuerStrategy{
		Type: configv1alpha1.StrategyTypeKubeClusterSigningCertificate, Status: configv1alpha1.StrategyStatusSuccess,
		Frontend: &configv1alpha1.CredentialIssuerFrontend{Type: configv1alpha1.FrontendTypeTokenCredentialRequestAPI},
	}), webhook)
	d := deps.Deps{
		Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{},
		Executable:         func() (string, error) { return "pinniped", nil },
		NewConciergeClient: func(*rest.Config) (deps.ConciergeClient, error) { return fake, nil },
	}
	outPath := filepath.Join(t.TempDir(), "out.yaml")
	if err := execute(d, []string{"--kubeconfig", writeKubeconfig(t, srv.URL, ca), "--static-token=t", "-o", outPath}, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	// A frontend without details means the Concierge is behind the cluster's own API server.
	args := strings.Join(cfg.AuthInfos["admin-pinniped"].Exec.Args, " ")
	if !strings.Contains(args, "--concierge-endpoint="+srv.URL) || !strings.Contains(args, "--concierge-ca-bundle-data="+b64(ca)) {
		t.Errorf("args %q do not fall back to the cluster's endpoint and CA", args)
	}

	// An endpoint nobody trusts fails validation.
	srv2 := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv2.Close()
	err = execute(d, []string{"--kubeconfig", writeKubeconfig(t, srv2.URL, clusterCA), "--static-token=t", "--timeout=100ms"}, 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "validating the kubeconfig") {
		t.Fatalf("err = %v, want a validation error", err)
	}
}

func writeFile(t *testing.T, data []byte) string {
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func execute(d deps.Deps, args []string, interval time.Duration) error {
	cmd := newCommand(d, interval)
	cmd.SetArgs(args)
	cmd.SetOut(d.Out)
	cmd.SetErr(d.ErrOut)
	return cmd.ExecuteContext(context.Background())
}

// TestRepeatedCABundles gives two CA files, each the only one trusting one of two issuers, both as
// repeated flags and comma-separated: either issuer is reached, and the bundles are written joined.
func TestRepeatedCABundles(t *testing.T) {
	plain := fakeissuer.New(t, fakeissuer.Options{})
	other := oidcissuer.New(t)
	plainCA, otherCA := writeFile(t, plain.CABundle), writeFile(t, other.CABundle)
	joined := b64(append(slices.Clone(other.CABundle), plain.CABundle...))
	conciergeCA := b64(append(slices.Clone(plain.CABundle), other.CABundle...))
	for _, issuer := range []string{plain.URL, other.Issuer} {
		for _, caArgs := range [][]string{
			{"--oidc-ca-bundle=" + otherCA, "--oidc-ca-bundle=" + plainCA, "--concierge-ca-bundle=" + plainCA, "--concierge-ca-bundle=" + otherCA},
			{"--oidc-ca-bundle=" + otherCA + "," + plainCA, "--concierge-ca-bundle=" + plainCA + "," + otherCA},
		} {
			fake := conciergefake.NewSimpleClientset(credentialIssuerWith("ci", tcrStrategy), jwtFor(plain))
			var out, errOut bytes.Buffer
			d := deps.Deps{
				Out: &out, ErrOut: &errOut,
				Executable:         func() (string, error) { return "pinniped", nil },
				NewConciergeClient: func(*rest.Config) (deps.ConciergeClient, error) { return fake, nil },
			}
			args := append([]string{"--kubeconfig", writeKubeconfig(t, clusterServer, clusterCA), "--skip-validation", "--oidc-issuer=" + issuer}, caArgs...)
			if err := execute(d, args, time.Millisecond); err != nil {
				t.Fatalf("issuer %s, %v: %v", issuer, caArgs, err)
			}
			cfg, err := clientcmd.Load(out.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].Exec.Args
			for _, want := range []string{"--ca-bundle-data=" + joined, "--concierge-ca-bundle-data=" + conciergeCA} {
				if !slices.Contains(got, want) {
					t.Errorf("issuer %s, %v: args %s lack %s", issuer, caArgs, got, want)
				}
			}
		}
	}
}
