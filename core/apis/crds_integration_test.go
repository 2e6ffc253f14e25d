package apis_test

import (
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"sealion.dev/core/testing/controlplane"
)

// TestCRDsOnAPIServer installs the generated CRDs on a real kube-apiserver and checks what users
// and their scripts see of them, against upstream Pinniped's: the API server's exact message for
// each refused object, the objects it accepts where a controller (not the schema) refuses them,
// and the printer columns of `kubectl get`.
func TestCRDsOnAPIServer(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{}) // skips under -short
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kubectl := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, cp.KubectlPath, append([]string{"--kubeconfig", cp.KubeconfigPath}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := kubectl("apply", "-f", crdDir); err != nil {
		t.Fatalf("installing the CRDs: %v\n%s", err, out)
	}
	if out, err := kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"); err != nil {
		t.Fatalf("waiting for the CRDs: %v\n%s", err, out)
	}
	const ns = "crds"
	if _, err := kubernetes.NewForConfigOrDie(cp.RESTConfig()).CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client := dynamic.NewForConfigOrDie(cp.RESTConfig())
	create := func(t *testing.T, resource, manifest string) error {
		t.Helper()
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
			t.Fatal(err)
		}
		gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
		if err != nil {
			t.Fatal(err)
		}
		// A CRD is served some moments after it is Established.
		return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := client.Resource(gv.WithResource(resource)).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			if err != nil && strings.Contains(err.Error(), "the server could not find the requested resource") {
				return false, nil
			}
			return true, err
		})
	}

	const (
		oidcClient = "apiVersion: config.supervisor.pinniped.dev/v1alpha1\nkind: OIDCClient\n"
		github     = "apiVersion: idp.supervisor.pinniped.dev/v1alpha1\nkind: GitHubIdentityProvider\n"
		oidcIDP    = "apiVersion: idp.supervisor.pinniped.dev/v1alpha1\nkind: OIDCIdentityProvider\n"
		ldapIDP    = "apiVersion: idp.supervisor.pinniped.dev/v1alpha1\nkind: LDAPIdentityProvider\n"
		clientSpec = "spec: {allowedRedirectURIs: [\"https://a\"], allowedGrantTypes: [authorization_code], allowedScopes: [openid]}\n"
	)
	refused := []struct {
		name, resource, manifest, want string
	}{
		{
			name: "OIDCClient name without the prefix", resource: "oidcclients",
			manifest: oidcClient + "metadata: {name: panda}\n" + clientSpec,
			want:     `OIDCClient.config.supervisor.pinniped.dev "panda" is invalid: metadata.name: Invalid value: "panda": metadata.name in body should match '^client\.oauth\.pinniped\.dev-'`,
		},
		{
			name: "OIDCClient name close to the prefix", resource: "oidcclients",
			manifest: oidcClient + "metadata: {name: client0oauth1pinniped2dev-regex}\n" + clientSpec,
			want:     `OIDCClient.config.supervisor.pinniped.dev "client0oauth1pinniped2dev-regex" is invalid: metadata.name: Invalid value: "client0oauth1pinniped2dev-regex": metadata.name in body should match '^client\.oauth\.pinniped\.dev-'`,
		},
		{
			name: "OIDCClient named only the prefix", resource: "oidcclients",
			manifest: oidcClient + "metadata: {name: client.oauth.pinniped.dev-}\n" + clientSpec,
			want: `OIDCClient.config.supervisor.pinniped.dev "client.oauth.pinniped.dev-" is invalid: metadata.name: Invalid value: "client.oauth.pinniped.dev-": ` +
				`a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character ` +
				`(e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		},
		{
			name: "OIDCClient redirect URI", resource: "oidcclients",
			manifest: oidcClient + "metadata: {name: client.oauth.pinniped.dev-hello}\n" +
				"spec: {allowedRedirectURIs: [\"http://127.0.0.1/callback\", oob], allowedGrantTypes: [authorization_code], allowedScopes: [openid]}\n",
			want: `OIDCClient.config.supervisor.pinniped.dev "client.oauth.pinniped.dev-hello" is invalid: spec.allowedRedirectURIs[1]: Invalid value: "oob": spec.allowedRedirectURIs[1] in body should match '^https://.+|^http://(127\.0\.0\.1|\[::1\])(:\d+)?/'`,
		},
		{
			name: "OIDCClient grant type", resource: "oidcclients",
			manifest: oidcClient + "metadata: {name: client.oauth.pinniped.dev-sky}\n" +
				"spec: {allowedRedirectURIs: [\"https://a\"], allowedGrantTypes: [refresh_token, authorization_code, bird], allowedScopes: [openid]}\n",
			want: `OIDCClient.config.supervisor.pinniped.dev "client.oauth.pinniped.dev-sky" is invalid: spec.allowedGrantTypes[2]: Unsupported value: "bird": supported values: "authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:token-exchange", "urn:ietf:params:oauth:grant-type:device_code"`,
		},
		{
			name: "GitHubIdentityProvider allowed organizations with AllGitHubUsers", resource: "githubidentityproviders",
			manifest: github + "metadata: {name: gh-1}\nspec: {client: {secretName: s}, allowAuthentication: {organizations: {policy: AllGitHubUsers, allowed: [org]}}}\n",
			want:     `GitHubIdentityProvider.idp.supervisor.pinniped.dev "gh-1" is invalid: spec.allowAuthentication.organizations: Invalid value: "object": spec.allowAuthentication.organizations.policy must be 'OnlyUsersFromAllowedOrganizations' when spec.allowAuthentication.organizations.allowed has organizations listed`,
		},
		{
			name: "GitHubIdentityProvider no organizations with the default policy", resource: "githubidentityproviders",
			manifest: github + "metadata: {name: gh-2}\nspec: {client: {secretName: s}, allowAuthentication: {organizations: {}}}\n",
			want:     `GitHubIdentityProvider.idp.supervisor.pinniped.dev "gh-2" is invalid: spec.allowAuthentication.organizations: Invalid value: "object": spec.allowAuthentication.organizations.policy must be 'AllGitHubUsers' when spec.allowAuthentication.organizations.allowed is empty`,
		},
		{
			name: "GitHubIdentityProvider 65 organizations", resource: "githubidentityproviders",
			manifest: github + "metadata: {name: gh-3}\nspec: {client: {secretName: s}, allowAuthentication: {organizations: {allowed: [" + orgs(65) + "]}}}\n",
			want: `GitHubIdentityProvider.idp.supervisor.pinniped.dev "gh-3" is invalid: [spec.allowAuthentication.organizations.allowed: Too many: 65: must have at most 64 items, ` +
				`<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`,
		},
		{
			name: "FederationDomain idle timeout over the session", resource: "federationdomains",
			manifest: "apiVersion: config.supervisor.pinniped.dev/v1alpha1\nkind: FederationDomain\nmetadata: {name: fd-idle}\n" +
				"spec: {issuer: \"https://issuer.example.com/idle\", sessionLifetimes: {maxSessionSeconds: 600, idleTimeoutSeconds: 601}}\n",
			want: `FederationDomain.config.supervisor.pinniped.dev "fd-idle" is invalid: spec.sessionLifetimes: Invalid value: "object": idleTimeoutSeconds must not exceed maxSessionSeconds (32400 when unset)`,
		},
		{
			name: "OIDCClient session over a week", resource: "oidcclients",
			manifest: oidcClient + "metadata: {name: client.oauth.pinniped.dev-week}\n" +
				"spec: {allowedRedirectURIs: [\"https://a\"], allowedGrantTypes: [authorization_code], allowedScopes: [openid], sessionLifetimes: {maxSessionSeconds: 604801}}\n",
			want: `OIDCClient.config.supervisor.pinniped.dev "client.oauth.pinniped.dev-week" is invalid: spec.sessionLifetimes.maxSessionSeconds: Invalid value: 604801: spec.sessionLifetimes.maxSessionSeconds in body should be less than or equal to 604800`,
		},
		{
			name: "SessionRevocation of an empty username", resource: "sessionrevocations",
			manifest: "apiVersion: config.supervisor.pinniped.dev/v1alpha1\nkind: SessionRevocation\nmetadata: {name: empty}\nspec: {usernames: [\"\"]}\n",
			want:     `SessionRevocation.config.supervisor.pinniped.dev "empty" is invalid: spec.usernames[0]: Invalid value: "": spec.usernames[0] in body should be at least 1 chars long`,
		},
		{
			name: "LDAPIdentityProvider empty user search attribute", resource: "ldapidentityproviders",
			manifest: ldapIDP + "metadata: {name: ldap-1}\nspec: {host: ldap.example.com, userSearch: {attributes: {uid: \"\"}}}\n",
			want:     `LDAPIdentityProvider.idp.supervisor.pinniped.dev "ldap-1" is invalid: spec.userSearch.attributes.uid: Invalid value: "": spec.userSearch.attributes.uid in body should be at least 1 chars long`,
		},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if err := create(t, tt.resource, tt.manifest); err == nil || !slices.Contains(apiServerForms(tt.want), err.Error()) {
				t.Errorf("got  %v\nwant %s", err, tt.want)
			}
		})
	}

	// Accepted by the API as upstream's are; the controllers report what is wrong in conditions.
	accepted := []struct{ name, resource, manifest string }{
		{"TLS with both CA sources", "oidcidentityproviders", oidcIDP + "metadata: {name: both-cas}\n" +
			"spec: {issuer: \"https://issuer.example.com\", client: {secretName: \"\"}, authorizationConfig: {additionalScopes: [openid]}, " +
			"tls: {certificateAuthorityData: Zm9v, certificateAuthorityDataSource: {kind: Secret, name: ca, key: ca.crt}}}\n"},
		{"LDAP without bind", "ldapidentityproviders", ldapIDP + "metadata: {name: no-bind}\nspec: {host: ldap.example.com}\n"},
		{"session lifetimes", "federationdomains", "apiVersion: config.supervisor.pinniped.dev/v1alpha1\nkind: FederationDomain\nmetadata: {name: fd-sessions}\n" +
			"spec: {issuer: \"https://issuer.example.com/sessions\", sessionLifetimes: {maxSessionSeconds: 604800, idleTimeoutSeconds: 60}}\n"},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			if err := create(t, tt.resource, tt.manifest); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
	// Our additions are kept as written, not pruned.
	if out, err := kubectl("get", "-n", ns, "federationdomains", "fd-sessions", "-o", "jsonpath={.spec.sessionLifetimes}"); err != nil || out != `{"idleTimeoutSeconds":60,"maxSessionSeconds":604800}` {
		t.Errorf("sessionLifetimes %s (%v), want both values kept", out, err)
	}
	// Nothing is defaulted into an OIDCIdentityProvider's authorizationConfig, which GitOps tools
	// would see as a difference from the applied manifest.
	out, err := kubectl("get", "-n", ns, "oidcidentityproviders", "both-cas", "-o", "jsonpath={.spec.authorizationConfig}")
	if want := `{"additionalScopes":["openid"]}`; err != nil || out != want {
		t.Errorf("authorizationConfig %s (%v), want %s", out, err, want)
	}

	// Printer columns, from the objects created above and one more of each printed kind.
	for _, obj := range []struct{ resource, manifest string }{
		{"oidcclients", oidcClient + "metadata: {name: client.oauth.pinniped.dev-app}\n" +
			"spec: {allowedRedirectURIs: [\"https://a\"], allowedGrantTypes: [authorization_code, \"urn:ietf:params:oauth:grant-type:token-exchange\", \"urn:ietf:params:oauth:grant-type:device_code\"], allowedScopes: [openid, username, groups, \"pinniped:request-audience\"]}\n"},
		{"githubidentityproviders", github + "metadata: {name: gh}\nspec: {client: {secretName: s}, allowAuthentication: {organizations: {policy: AllGitHubUsers}}}\n"},
		{"activedirectoryidentityproviders", "apiVersion: idp.supervisor.pinniped.dev/v1alpha1\nkind: ActiveDirectoryIdentityProvider\nmetadata: {name: ad}\nspec: {host: ad.example.com}\n"},
		{"federationdomains", "apiVersion: config.supervisor.pinniped.dev/v1alpha1\nkind: FederationDomain\nmetadata: {name: fd}\nspec: {issuer: \"https://issuer.example.com/fd\"}\n"},
		{"sessionrevocations", "apiVersion: config.supervisor.pinniped.dev/v1alpha1\nkind: SessionRevocation\nmetadata: {name: leaver}\n" +
			"spec: {federationDomainName: fd, usernames: [pinny], groups: [seals], startedBefore: \"2026-12-06T05:00:00Z\", reason: left}\n"},
	} {
		if err := create(t, obj.resource, obj.manifest); err != nil {
			t.Fatalf("creating %s: %v", obj.resource, err)
		}
	}
	columns := []struct {
		resource string
		header   []string
		// row is the start of the first row, before the Status column: no controller runs here, so
		// the objects have no status.
		row []string
	}{
		{"federationdomains", []string{"NAME", "ISSUER", "STATUS", "AGE"}, []string{"fd", "https://issuer.example.com/fd"}},
		{"oidcclients", []string{"NAME", "PRIVILEGED SCOPES", "CLIENT SECRETS", "STATUS", "AGE"}, []string{"client.oauth.pinniped.dev-app", "pinniped:request-audience"}},
		{"oidcidentityproviders", []string{"NAME", "ISSUER", "STATUS", "AGE"}, []string{"both-cas", "https://issuer.example.com"}},
		{"ldapidentityproviders", []string{"NAME", "HOST", "STATUS", "AGE"}, []string{"no-bind", "ldap.example.com"}},
		{"activedirectoryidentityproviders", []string{"NAME", "HOST", "STATUS", "AGE"}, []string{"ad", "ad.example.com"}},
		{"githubidentityproviders", []string{"NAME", "HOST", "STATUS", "AGE"}, []string{"gh", "github.com"}},
		{"sessionrevocations", []string{"NAME", "FEDERATION DOMAIN", "REVOKED SESSIONS", "STATUS", "AGE"}, []string{"leaver", "fd"}},
	}
	cells := regexp.MustCompile(`\s{2,}`)
	for _, tt := range columns {
		t.Run("columns of "+tt.resource, func(t *testing.T) {
			out, err := kubectl("get", "-n", ns, tt.resource)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if err != nil || len(lines) < 2 {
				t.Fatalf("kubectl get: %v\n%s", err, out)
			}
			header, row := cells.Split(strings.TrimSpace(lines[0]), -1), cells.Split(strings.TrimSpace(lines[1]), -1)
			if !slices.Equal(header, tt.header) || len(row) < len(tt.row) || !slices.Equal(row[:len(tt.row)], tt.row) {
				t.Errorf("kubectl get %s:\n%s\nwant the columns %q and a row starting %q", tt.resource, out, tt.header, tt.row)
			}
		})
	}
}

// orgs lists n organization names for a YAML flow sequence.
func orgs(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = "org-" + strings.Repeat("x", i+1)
	}
	return strings.Join(names, ", ")
}

// apiServerForms are the ways kube-apiserver versions print a refusal written as up to 1.36 prints
// it: 1.37 leaves out the value of a rule on an object ("object") and no longer quotes null.
func apiServerForms(want string) []string {
	since137 := strings.NewReplacer(`Invalid value: "object": `, `Invalid value: `, `Invalid value: "null"`, `Invalid value: null`).Replace(want)
	return []string{want, since137}
}
