package integration

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/signingkeys"
	"sealion.dev/servers/supervisor/internal/sni"
)

const waitTimeout = 30 * time.Second

// response is what a request to the Supervisor returned, with the certificate it was served with.
type response struct {
	status   int
	body     []byte
	dnsNames []string
}

// get fetches url from the Supervisor, verifying its certificate with the test CA.
func get(t *testing.T, url string) response {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(env.ca.Certificate())
	resp, err := env.httpClient(roots).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, body: body, dnsNames: resp.TLS.PeerCertificates[0].DNSNames}
}

// eventually retries check until it returns nil or the wait times out, then fails with its error.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v%s", what, last, env.serverLog())
	}
}

func createTLSSecret(t *testing.T, name string, dnsNames ...string) {
	t.Helper()
	certPEM, keyPEM, err := env.ca.IssueServingCert(dnsNames[0], dnsNames, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	createObject(t, env.kube.CoreV1().Secrets(supervisorNamespace).Create, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	})
	t.Cleanup(func() {
		_ = env.kube.CoreV1().Secrets(supervisorNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// createObject creates obj with a create function of a typed client and fails the test on error.
func createObject[T any](t *testing.T, create func(context.Context, T, metav1.CreateOptions) (T, error), obj T) T {
	t.Helper()
	created, err := create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

func createFederationDomain(t *testing.T, name string, spec configv1alpha1.FederationDomainSpec) *configv1alpha1.FederationDomain {
	t.Helper()
	client := env.supervisor.ConfigV1alpha1().FederationDomains(supervisorNamespace)
	fd := createObject(t, client.Create, &configv1alpha1.FederationDomain{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
	t.Cleanup(func() { _ = client.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return fd
}

// createLDAPIssuer makes a FederationDomain named name at https://host:<port>/path, served with
// its own TLS Secret and one LDAPIdentityProvider (whose server need not exist: an issuer is served
// once its identity providers exist, reachable or not), and returns the issuer.
func createLDAPIssuer(t *testing.T, name, host, path string) string {
	t.Helper()
	createTLSSecret(t, name+"-tls", host)
	createObject(t, env.supervisor.IdpV1alpha1().LDAPIdentityProviders(supervisorNamespace).Create, &idpv1alpha1.LDAPIdentityProvider{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-ldap"},
		Spec:       idpv1alpha1.LDAPIdentityProviderSpec{Host: "ldap.example.test", Bind: idpv1alpha1.LDAPIdentityProviderBind{SecretName: "bind"}},
	})
	t.Cleanup(func() {
		_ = env.supervisor.IdpV1alpha1().LDAPIdentityProviders(supervisorNamespace).Delete(context.Background(), name+"-ldap", metav1.DeleteOptions{})
	})
	issuer := fmt.Sprintf("https://%s:%d/%s", host, env.port, path)
	createFederationDomain(t, name, configv1alpha1.FederationDomainSpec{
		Issuer: issuer,
		TLS:    &configv1alpha1.FederationDomainTLSSpec{SecretName: name + "-tls"},
		IdentityProviders: []configv1alpha1.FederationDomainIdentityProvider{{
			DisplayName: "Corp LDAP",
			ObjectRef:   corev1.TypedLocalObjectReference{APIGroup: ptr.To(idpv1alpha1.GroupName), Kind: "LDAPIdentityProvider", Name: name + "-ldap"},
		}},
	})
	return issuer
}

// waitForConditions waits until the FederationDomain's conditions have the given status/reason
// (types not named must be True) and returns it.
func waitForConditions(t *testing.T, name string, phase configv1alpha1.Phase, want map[string]string) *configv1alpha1.FederationDomain {
	t.Helper()
	var fd *configv1alpha1.FederationDomain
	eventually(t, "FederationDomain "+name+" conditions", func() error {
		var err error
		fd, err = env.supervisor.ConfigV1alpha1().FederationDomains(supervisorNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got := map[string]string{}
		for _, c := range fd.Status.Conditions {
			if c.ObservedGeneration != fd.Generation {
				return fmt.Errorf("condition %s is of generation %d, not %d", c.Type, c.ObservedGeneration, fd.Generation)
			}
			if c.Status == metav1.ConditionTrue && c.Reason == configv1alpha1.ReasonSuccess && want[c.Type] == "" {
				continue
			}
			got[c.Type] = string(c.Status) + "/" + c.Reason
		}
		if len(fd.Status.Conditions) != 10 {
			return fmt.Errorf("%d conditions: %v", len(fd.Status.Conditions), fd.Status.Conditions)
		}
		if diff := cmp.Diff(want, got); diff != "" || fd.Status.Phase != phase {
			return fmt.Errorf("phase %s, conditions (-want +got):\n%s", fd.Status.Phase, diff)
		}
		return nil
	})
	return fd
}

func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return v
}

func TestFederationDomainEndpoints(t *testing.T) {
	ctx := context.Background()
	createTLSSecret(t, defaultTLSSecret, "*.example.test")
	createTLSSecret(t, "sni-tls", "sni.example.test")
	createObject(t, env.supervisor.IdpV1alpha1().LDAPIdentityProviders(supervisorNamespace).Create, &idpv1alpha1.LDAPIdentityProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "corp-ldap"},
		Spec:       idpv1alpha1.LDAPIdentityProviderSpec{Host: "ldap.example.test", Bind: idpv1alpha1.LDAPIdentityProviderBind{SecretName: "bind"}},
	})
	t.Cleanup(func() {
		_ = env.supervisor.IdpV1alpha1().LDAPIdentityProviders(supervisorNamespace).Delete(ctx, "corp-ldap", metav1.DeleteOptions{})
	})
	ldapRef := func(displayName string) configv1alpha1.FederationDomainIdentityProvider {
		return configv1alpha1.FederationDomainIdentityProvider{
			DisplayName: displayName,
			ObjectRef:   corev1.TypedLocalObjectReference{APIGroup: ptr.To(idpv1alpha1.GroupName), Kind: "LDAPIdentityProvider", Name: "corp-ldap"},
			Transforms: configv1alpha1.FederationDomainTransforms{
				Constants:   []configv1alpha1.FederationDomainTransformsConstant{{Name: "prefix", Type: "string", StringValue: "ldap:"}},
				Expressions: []configv1alpha1.FederationDomainTransformsExpression{{Type: "username/v1", Expression: "strConst.prefix + username"}},
				Examples: []configv1alpha1.FederationDomainTransformsExample{
					{Username: "pinny", Expects: configv1alpha1.FederationDomainTransformsExampleExpects{Username: "ldap:pinny"}},
				},
			},
		}
	}
	issuerURL := func(host, path string) string { return fmt.Sprintf("https://%s:%d%s", host, env.port, path) }

	valid := createFederationDomain(t, "valid", configv1alpha1.FederationDomainSpec{
		Issuer:            issuerURL("SNI.example.test", "/valid"),
		TLS:               &configv1alpha1.FederationDomainTLSSpec{SecretName: "sni-tls"},
		IdentityProviders: []configv1alpha1.FederationDomainIdentityProvider{ldapRef("Corp LDAP")},
	})
	// The only identity provider of the namespace is used when none is listed.
	createFederationDomain(t, "legacy", configv1alpha1.FederationDomainSpec{Issuer: issuerURL("legacy.example.test", "")})
	createFederationDomain(t, "invalid", configv1alpha1.FederationDomainSpec{Issuer: issuerURL("invalid.example.test", "/x?query=1")})
	createFederationDomain(t, "dup-1", configv1alpha1.FederationDomainSpec{Issuer: issuerURL("dup.example.test", "/same")})
	createFederationDomain(t, "dup-2", configv1alpha1.FederationDomainSpec{Issuer: issuerURL("DUP.example.test", "/same")})
	failing := ldapRef("Failing")
	failing.Transforms.Examples[0].Expects.Username = "pinny"
	createFederationDomain(t, "failing-example", configv1alpha1.FederationDomainSpec{
		Issuer:            issuerURL("failing.example.test", ""),
		IdentityProviders: []configv1alpha1.FederationDomainIdentityProvider{failing},
	})

	waitForConditions(t, "valid", configv1alpha1.PhaseReady, map[string]string{})
	waitForConditions(t, "legacy", configv1alpha1.PhaseReady, map[string]string{
		configv1alpha1.ConditionIdentityProvidersFound: "True/LegacyConfigurationSuccess",
	})
	// An issuer that parses is compared with the others although it is invalid, as upstream does.
	waitForConditions(t, "invalid", configv1alpha1.PhaseError, map[string]string{
		configv1alpha1.ConditionIssuerURLValid:         "False/InvalidIssuerURL",
		configv1alpha1.ConditionIdentityProvidersFound: "True/LegacyConfigurationSuccess",
		configv1alpha1.ConditionReady:                  "False/NotReady",
	})
	for _, name := range []string{"dup-1", "dup-2"} {
		waitForConditions(t, name, configv1alpha1.PhaseError, map[string]string{
			configv1alpha1.ConditionIssuerIsUnique:         "False/DuplicateIssuer",
			configv1alpha1.ConditionIdentityProvidersFound: "True/LegacyConfigurationSuccess",
			configv1alpha1.ConditionReady:                  "False/NotReady",
		})
	}
	waitForConditions(t, "failing-example", configv1alpha1.PhaseError, map[string]string{
		configv1alpha1.ConditionTransformsExamplesPassed: "False/TransformsExamplesFailed",
		configv1alpha1.ConditionReady:                    "False/NotReady",
	})

	t.Run("discovery over HTTPS with the SNI-chosen certificate", func(t *testing.T) {
		base := issuerURL("sni.example.test", "/valid")
		var r response
		eventually(t, "discovery", func() error {
			r = get(t, base+"/.well-known/openid-configuration")
			if r.status != http.StatusOK {
				return fmt.Errorf("status %d: %s", r.status, r.body)
			}
			return nil
		})
		if !cmp.Equal(r.dnsNames, []string{"sni.example.test"}) {
			t.Errorf("served the certificate for %v, want the FederationDomain's", r.dnsNames)
		}
		doc := decode[map[string]any](t, r.body)
		if doc["issuer"] != valid.Spec.Issuer || doc["jwks_uri"] != valid.Spec.Issuer+"/jwks.json" ||
			!cmp.Equal(doc["code_challenge_methods_supported"], []any{"S256"}) {
			t.Errorf("discovery document %s", r.body)
		}
		supervisorKey, _ := doc["discovery.supervisor.pinniped.dev/v1alpha1"].(map[string]any)
		if supervisorKey["pinniped_identity_providers_endpoint"] != valid.Spec.Issuer+"/v1alpha1/pinniped_identity_providers" {
			t.Errorf("no IDP discovery pointer: %s", r.body)
		}

		idps := get(t, base+"/v1alpha1/pinniped_identity_providers")
		wantIDPs := []any{map[string]any{"name": "Corp LDAP", "type": "ldap", "flows": []any{"cli_password", "browser_authcode"}}}
		if got := decode[map[string]any](t, idps.body)["pinniped_identity_providers"]; idps.status != http.StatusOK || !cmp.Equal(wantIDPs, got) {
			t.Errorf("IDP discovery: %d %s", idps.status, idps.body)
		}

		// Unknown endpoints are 404.
		for _, path := range []string{"/nothing", "/.well-known/openid-configuration/"} {
			if r := get(t, base+path); r.status != http.StatusNotFound {
				t.Errorf("%s: %d", path, r.status)
			}
		}
	})

	t.Run("JWKS from the key Secret, and rotation by deleting it", func(t *testing.T) {
		base := issuerURL("sni.example.test", "/valid")
		fd, err := env.supervisor.ConfigV1alpha1().FederationDomains(supervisorNamespace).Get(ctx, "valid", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secrets := fd.Status.Secrets
		for _, name := range []string{secrets.JWKS.Name, secrets.TokenSigningKey.Name, secrets.StateSigningKey.Name, secrets.StateEncryptionKey.Name} {
			s, err := env.kube.CoreV1().Secrets(supervisorNamespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("key Secret %q: %v", name, err)
			}
			if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != fd.UID || s.Labels["app"] != "pinniped-supervisor" {
				t.Errorf("Secret %s: owners %+v, labels %v", name, s.OwnerReferences, s.Labels)
			}
		}
		if secrets.JWKS.Name != "valid-jwks" || secrets.TokenSigningKey.Name != "pinniped-oidc-provider-hmac-key-"+string(fd.UID) {
			t.Errorf("status.secrets %+v", secrets)
		}

		served := func() jose.JSONWebKeySet {
			r := get(t, base+"/jwks.json")
			if r.status != http.StatusOK {
				t.Fatalf("JWKS: %d %s", r.status, r.body)
			}
			return decode[jose.JSONWebKeySet](t, r.body)
		}
		stored := func() jose.JSONWebKeySet {
			s, err := env.kube.CoreV1().Secrets(supervisorNamespace).Get(ctx, "valid-jwks", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return decode[jose.JSONWebKeySet](t, s.Data[signingkeys.JWKSPublicKey])
		}
		first := served()
		if len(first.Keys) != 1 || !first.Keys[0].IsPublic() || first.Keys[0].KeyID != signingkeys.KeyID || !cmp.Equal(first.Keys[0].Key, stored().Keys[0].Key) {
			t.Fatalf("served JWKS %+v differs from the stored one", first)
		}

		if err := env.kube.CoreV1().Secrets(supervisorNamespace).Delete(ctx, "valid-jwks", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "a new key", func() error {
			now := served()
			if cmp.Equal(now.Keys[0].Key, first.Keys[0].Key) {
				return fmt.Errorf("still the old key")
			}
			if !cmp.Equal(now.Keys[0].Key, stored().Keys[0].Key) {
				return fmt.Errorf("the served key is not the stored one")
			}
			return nil
		})
	})

	t.Run("the plain HTTP listener serves the same endpoints, by Host header", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, "http://"+env.httpAddress+"/valid/.well-known/openid-configuration", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = fmt.Sprintf("sni.example.test:%d", env.port)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || decode[map[string]any](t, body)["issuer"] != valid.Spec.Issuer {
			t.Errorf("%d: %s", resp.StatusCode, body)
		}
	})

	t.Run("default certificate and legacy identity provider", func(t *testing.T) {
		r := get(t, issuerURL("legacy.example.test", "/v1alpha1/pinniped_identity_providers"))
		if r.status != http.StatusOK || !cmp.Equal(r.dnsNames, []string{"*.example.test"}) {
			t.Fatalf("%d with the certificate for %v: %s", r.status, r.dnsNames, r.body)
		}
		want := []any{map[string]any{"name": "corp-ldap", "type": "ldap", "flows": []any{"cli_password", "browser_authcode"}}}
		if got := decode[map[string]any](t, r.body)["pinniped_identity_providers"]; !cmp.Equal(want, got) {
			t.Errorf("IDP discovery %s", r.body)
		}
	})

	t.Run("FederationDomains that are not Ready are not served", func(t *testing.T) {
		// As Pinniped: any false condition (an invalid or duplicate issuer, a failing transform
		// example) keeps the whole FederationDomain from being served.
		for _, url := range []string{
			issuerURL("invalid.example.test", "/x/.well-known/openid-configuration"),
			issuerURL("dup.example.test", "/same/.well-known/openid-configuration"),
			issuerURL("failing.example.test", "/v1alpha1/pinniped_identity_providers"),
		} {
			if r := get(t, url); r.status != http.StatusNotFound {
				t.Errorf("%s: %d", url, r.status)
			}
		}
	})

	t.Run("fixing a FederationDomain serves it", func(t *testing.T) {
		client := env.supervisor.ConfigV1alpha1().FederationDomains(supervisorNamespace)
		if err := client.Delete(ctx, "dup-2", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForConditions(t, "dup-1", configv1alpha1.PhaseReady, map[string]string{
			configv1alpha1.ConditionIdentityProvidersFound: "True/LegacyConfigurationSuccess",
		})
		eventually(t, "dup-1 served", func() error {
			if r := get(t, issuerURL("dup.example.test", "/same/.well-known/openid-configuration")); r.status != http.StatusOK {
				return fmt.Errorf("status %d", r.status)
			}
			return nil
		})

		// Two TLS Secrets for the same hostname break every FederationDomain of it, those naming
		// none too.
		createTLSSecret(t, "other-tls", "dup.example.test")
		for name, secret := range map[string]string{"other-secret": "other-tls", "another-secret": "sni-tls"} {
			createFederationDomain(t, name, configv1alpha1.FederationDomainSpec{
				Issuer: issuerURL("dup.example.test", "/"+name),
				TLS:    &configv1alpha1.FederationDomainTLSSpec{SecretName: secret},
			})
		}
		conflict := map[string]string{
			configv1alpha1.ConditionOneTLSSecretPerIssuerHostname: "False/DifferentSecretRefsFound",
			configv1alpha1.ConditionIdentityProvidersFound:        "True/LegacyConfigurationSuccess",
			configv1alpha1.ConditionReady:                         "False/NotReady",
		}
		waitForConditions(t, "other-secret", configv1alpha1.PhaseError, conflict)
		fd := waitForConditions(t, "dup-1", configv1alpha1.PhaseError, conflict)
		const want = "when different FederationDomains are using the same hostname in the spec.issuer URL then they must also use the same TLS secretRef: different secretRefs found"
		if c := meta.FindStatusCondition(fd.Status.Conditions, configv1alpha1.ConditionOneTLSSecretPerIssuerHostname); c.Message != want {
			t.Errorf("message %q", c.Message)
		}
	})

	t.Run("deleting a FederationDomain stops serving it", func(t *testing.T) {
		if err := env.supervisor.ConfigV1alpha1().FederationDomains(supervisorNamespace).Delete(ctx, "legacy", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "legacy gone", func() error {
			if r := get(t, issuerURL("legacy.example.test", "/.well-known/openid-configuration")); r.status != http.StatusNotFound {
				return fmt.Errorf("status %d", r.status)
			}
			return nil
		})
	})
}

func TestHealthzWithBootstrapCertificate(t *testing.T) {
	// Without a default certificate (the other tests delete theirs), a name without a certificate
	// gets the bootstrap one, which no client trusts, but health probes (which do not verify) work.
	// Everything else on that connection is Pinniped's 500.
	for path, want := range map[string]string{
		"/healthz":      "200 ok",
		"/":             "500 pinniped supervisor has invalid TLS serving certificate configuration\n",
		"/nothealthz":   "500 pinniped supervisor has invalid TLS serving certificate configuration\n",
		"/healthz/more": "500 pinniped supervisor has invalid TLS serving certificate configuration\n",
	} {
		eventually(t, "the bootstrap certificate at "+path, func() error {
			resp, err := env.httpClient(nil).Get("https://nothing.example.test" + path)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			got := fmt.Sprintf("%d %s", resp.StatusCode, body)
			if cn := resp.TLS.PeerCertificates[0].Subject.CommonName; got != want || cn != sni.BootstrapCommonName {
				return fmt.Errorf("%q from %s, want %q from %s", got, cn, want, sni.BootstrapCommonName)
			}
			return nil
		})
	}
}

// TestCRDValidation checks that the installed CRD refuses what the API forbids.
func TestCRDValidation(t *testing.T) {
	client := env.supervisor.ConfigV1alpha1().FederationDomains(supervisorNamespace)
	for issuer, want := range map[string]string{
		"http://example.test": "issuer must be an HTTPS URL",
		"not a url":           "issuer must be an HTTPS URL",
		"":                    "spec.issuer",
	} {
		_, err := client.Create(context.Background(), &configv1alpha1.FederationDomain{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "crd-"},
			Spec:       configv1alpha1.FederationDomainSpec{Issuer: issuer},
		}, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("issuer %q: got %v, want an error containing %q", issuer, err, want)
		}
	}
}
