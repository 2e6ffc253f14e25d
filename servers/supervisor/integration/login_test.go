package integration

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/oauth2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/testing/oidcissuer"
	"sealion.dev/servers/supervisor/internal/connectors/oidcidp"
)

// An OIDCIdentityProvider becomes Ready once the Supervisor has discovered its issuer, and the
// authorize endpoint of a FederationDomain that lists it sends the pinniped CLI's PKCE request
// there.
func TestAuthorizeRedirectsToUpstreamOIDC(t *testing.T) {
	ctx := context.Background()
	upstream := oidcissuer.New(t)
	const idpName, displayName, clientID = "upstream-oidc", "Upstream OIDC", "supervisor-at-upstream"

	secrets := env.kube.CoreV1().Secrets(supervisorNamespace)
	createObject(t, secrets.Create, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "upstream-oidc-client"},
		Type:       oidcidp.ClientSecretType,
		StringData: map[string]string{"clientID": clientID, "clientSecret": "upstream-secret"},
	})
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), "upstream-oidc-client", metav1.DeleteOptions{}) })
	idps := env.supervisor.IdpV1alpha1().OIDCIdentityProviders(supervisorNamespace)
	createObject(t, idps.Create, &idpv1alpha1.OIDCIdentityProvider{
		ObjectMeta: metav1.ObjectMeta{Name: idpName},
		Spec: idpv1alpha1.OIDCIdentityProviderSpec{
			Issuer: upstream.Issuer,
			TLS:    &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(upstream.CABundle)},
			Client: idpv1alpha1.OIDCClientCredentials{SecretName: "upstream-oidc-client"},
		},
	})
	t.Cleanup(func() { _ = idps.Delete(context.Background(), idpName, metav1.DeleteOptions{}) })

	createTLSSecret(t, "login-tls", "login.example.test")
	issuerURL := fmt.Sprintf("https://login.example.test:%d/login-issuer", env.port)
	createFederationDomain(t, "login", configv1alpha1.FederationDomainSpec{
		Issuer: issuerURL,
		TLS:    &configv1alpha1.FederationDomainTLSSpec{SecretName: "login-tls"},
		IdentityProviders: []configv1alpha1.FederationDomainIdentityProvider{{
			DisplayName: displayName,
			ObjectRef:   corev1.TypedLocalObjectReference{APIGroup: ptr.To(idpv1alpha1.GroupName), Kind: "OIDCIdentityProvider", Name: idpName},
		}},
	})

	eventually(t, "OIDCIdentityProvider Ready", func() error {
		idp, err := idps.Get(ctx, idpName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if idp.Status.Phase != idpv1alpha1.PhaseReady {
			return fmt.Errorf("phase %q, conditions %+v", idp.Status.Phase, idp.Status.Conditions)
		}
		return nil
	})
	waitForConditions(t, "login", configv1alpha1.PhaseReady, map[string]string{})

	verifier := oauth2.GenerateVerifier()
	cliConfig := oauth2.Config{
		ClientID:    "pinniped-cli",
		Endpoint:    oauth2.Endpoint{AuthURL: issuerURL + "/oauth2/authorize"},
		RedirectURL: "http://127.0.0.1:48095/callback",
		Scopes:      []string{"openid", "offline_access", "pinniped:request-audience", "username", "groups"},
	}
	authorizeURL := cliConfig.AuthCodeURL("state-of-the-pinniped-cli",
		oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("nonce", "nonce-of-the-pinniped-cli"),
		oauth2.SetAuthURLParam("pinniped_idp_name", displayName))

	roots := x509.NewCertPool()
	roots.AddCert(env.ca.Certificate())
	client := env.httpClient(roots)
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	var location *url.URL
	// The endpoints serve the upstream as soon as the registry has it, which may be a moment
	// after its status says Ready.
	eventually(t, "authorize redirect", func() error {
		resp, err := client.Get(authorizeURL)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusFound {
			return fmt.Errorf("status %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		location, err = resp.Location()
		return err
	})

	if got := location.Scheme + "://" + location.Host + location.Path; got != upstream.Issuer+"/authorize" {
		t.Errorf("redirected to %s, want the upstream's authorization endpoint", location)
	}
	q := location.Query()
	for param, want := range map[string]string{
		"client_id":             clientID,
		"redirect_uri":          issuerURL + "/callback",
		"response_type":         "code",
		"code_challenge_method": "S256",
	} {
		if got := q.Get(param); got != want {
			t.Errorf("upstream %s = %q, want %q (in %s)", param, got, want, location)
		}
	}
	// The Supervisor runs its own PKCE and state with the upstream: neither is the CLI's.
	if q.Get("code_challenge") == "" || q.Get("code_challenge") == oauth2.S256ChallengeFromVerifier(verifier) ||
		q.Get("state") == "" || q.Get("state") == "state-of-the-pinniped-cli" {
		t.Errorf("upstream PKCE and state: %s", location)
	}
}
