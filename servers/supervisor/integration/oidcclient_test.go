package integration

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clientsecretv1alpha1 "sealion.dev/core/apis/supervisor/clientsecret/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/testing/oidcissuer"
	"sealion.dev/servers/supervisor/internal/aggregatortest"
	"sealion.dev/servers/supervisor/internal/connectors/oidcidp"
)

var apiServiceOnce sync.Once

// ensureAPIService registers the aggregated API the first time a test of the package needs it.
func ensureAPIService(ctx context.Context, t *testing.T) {
	t.Helper()
	apiServiceOnce.Do(func() {
		aggregatortest.RegisterAPIService(ctx, t, env.cp.RESTConfig(), supervisorNamespace, apiServiceName, env.apiPort, nil)
	})
}

// An OIDCClient with a secret from an OIDCClientSecretRequest logs a user in through the
// Supervisor: authorization code with PKCE at a FederationDomain whose upstream is an OIDC
// provider, then the token endpoint with the client's secret.
func TestOIDCClientLogin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const (
		idpName, displayName = "client-login-oidc", "Client Login OIDC"
		clientName           = configv1alpha1.OIDCClientNamePrefix + "login-app"
		redirectURI          = "http://127.0.0.1:48096/app/callback"
		host                 = "client-login.example.test"
	)
	upstream := startLoginUpstream(t, "supervisor-at-upstream")

	secrets := env.kube.CoreV1().Secrets(supervisorNamespace)
	createObject(t, secrets.Create, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: idpName + "-client"},
		Type:       oidcidp.ClientSecretType,
		StringData: map[string]string{"clientID": "supervisor-at-upstream", "clientSecret": "upstream-secret"},
	})
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), idpName+"-client", metav1.DeleteOptions{}) })
	idps := env.supervisor.IdpV1alpha1().OIDCIdentityProviders(supervisorNamespace)
	createObject(t, idps.Create, &idpv1alpha1.OIDCIdentityProvider{
		ObjectMeta: metav1.ObjectMeta{Name: idpName},
		Spec: idpv1alpha1.OIDCIdentityProviderSpec{
			Issuer: upstream.Issuer,
			TLS:    &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(upstream.CABundle)},
			Client: idpv1alpha1.OIDCClientCredentials{SecretName: idpName + "-client"},
			Claims: idpv1alpha1.OIDCClaims{Username: "email", Groups: "groups"},
		},
	})
	t.Cleanup(func() { _ = idps.Delete(context.Background(), idpName, metav1.DeleteOptions{}) })
	createTLSSecret(t, "client-login-tls", host)
	issuerURL := fmt.Sprintf("https://%s:%d/client-login", host, env.port)
	createFederationDomain(t, "client-login", configv1alpha1.FederationDomainSpec{
		Issuer: issuerURL,
		TLS:    &configv1alpha1.FederationDomainTLSSpec{SecretName: "client-login-tls"},
		IdentityProviders: []configv1alpha1.FederationDomainIdentityProvider{{
			DisplayName: displayName,
			ObjectRef:   corev1.TypedLocalObjectReference{APIGroup: ptr.To(idpv1alpha1.GroupName), Kind: "OIDCIdentityProvider", Name: idpName},
		}},
	})

	clients := env.supervisor.ConfigV1alpha1().OIDCClients(supervisorNamespace)
	createObject(t, clients.Create, &configv1alpha1.OIDCClient{
		ObjectMeta: metav1.ObjectMeta{Name: clientName},
		Spec: configv1alpha1.OIDCClientSpec{
			AllowedRedirectURIs: []configv1alpha1.RedirectURI{"http://127.0.0.1/app/callback"},
			AllowedGrantTypes:   []configv1alpha1.GrantType{configv1alpha1.GrantTypeAuthorizationCode, configv1alpha1.GrantTypeRefreshToken},
			AllowedScopes:       []configv1alpha1.Scope{configv1alpha1.ScopeOpenID, configv1alpha1.ScopeOfflineAccess, configv1alpha1.ScopeUsername},
		},
	})
	t.Cleanup(func() { _ = clients.Delete(context.Background(), clientName, metav1.DeleteOptions{}) })
	waitForClient(t, clientName, configv1alpha1.PhaseError, 0)

	ensureAPIService(ctx, t)
	resp, err := env.supervisor.ClientsecretV1alpha1().OIDCClientSecretRequests(supervisorNamespace).Create(ctx, &clientsecretv1alpha1.OIDCClientSecretRequest{
		ObjectMeta: metav1.ObjectMeta{Name: clientName},
		Spec:       clientsecretv1alpha1.OIDCClientSecretRequestSpec{GenerateNewSecret: true},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating an OIDCClientSecretRequest: %v", err)
	}
	clientSecret := resp.Status.GeneratedSecret
	waitForClient(t, clientName, configv1alpha1.PhaseReady, 1)
	waitForConditions(t, "client-login", configv1alpha1.PhaseReady, map[string]string{})

	roots := x509.NewCertPool()
	roots.AddCert(env.ca.Certificate())
	roots.AppendCertsFromPEM(upstream.CABundle)
	browser := browserFor(t, host, roots)
	app := &oauth2.Config{
		ClientID: clientName, ClientSecret: clientSecret, RedirectURL: redirectURI,
		Endpoint: oauth2.Endpoint{AuthURL: issuerURL + "/oauth2/authorize", TokenURL: issuerURL + "/oauth2/token", AuthStyle: oauth2.AuthStyleInHeader},
		Scopes:   []string{"openid", "offline_access", "username"},
	}
	verifier, state, nonce := oauth2.GenerateVerifier(), rand.Text(), rand.Text()
	var code string
	// The endpoints serve the upstream as soon as the registry has it, which may be a moment
	// after its status says Ready.
	eventually(t, "login through the upstream", func() error {
		resp, err := browser.Get(app.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)))
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			return fmt.Errorf("status %d without a redirect", resp.StatusCode)
		}
		if loc.Host != "127.0.0.1:48096" || loc.Query().Get("state") != state || loc.Query().Get("code") == "" {
			return fmt.Errorf("login ended at %s", loc)
		}
		code = loc.Query().Get("code")
		return nil
	})

	tokenCtx := context.WithValue(ctx, oauth2.HTTPClient, browser)
	wrong := *app
	wrong.ClientSecret = strings.Repeat("0", 64)
	var re *oauth2.RetrieveError
	if _, err := wrong.Exchange(tokenCtx, code, oauth2.VerifierOption(verifier)); !errors.As(err, &re) || re.ErrorCode != "invalid_client" {
		t.Errorf("redeeming the code with a wrong secret: %v, want invalid_client", err)
	}
	tok, err := app.Exchange(tokenCtx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("redeeming the code with the client's secret: %v", err)
	}
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, browser), issuerURL)
	if err != nil {
		t.Fatal(err)
	}
	idToken, err := provider.Verifier(&oidc.Config{ClientID: clientName}).Verify(oidc.ClientContext(ctx, browser), tok.Extra("id_token").(string))
	if err != nil {
		t.Fatalf("the ID token does not verify with the client ID as audience: %v", err)
	}
	var claims map[string]any
	if err := idToken.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if claims["username"] != "pinny@example.com" || claims["nonce"] != nonce {
		t.Errorf("ID token claims %v", claims)
	}
	if _, ok := claims["groups"]; ok {
		t.Errorf("ID token has groups although the groups scope was not granted: %v", claims)
	}
	if _, err := app.TokenSource(tokenCtx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err != nil {
		t.Errorf("refresh: %v", err)
	}
}

// waitForClient waits until the OIDCClient's status has phase and total client secrets.
func waitForClient(t *testing.T, name string, phase configv1alpha1.Phase, total int32) {
	t.Helper()
	eventually(t, "OIDCClient "+name+" "+string(phase), func() error {
		c, err := env.supervisor.ConfigV1alpha1().OIDCClients(supervisorNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.Status.Phase != phase || c.Status.TotalClientSecrets != total {
			return fmt.Errorf("phase %q, %d secrets, conditions %+v", c.Status.Phase, c.Status.TotalClientSecrets, c.Status.Conditions)
		}
		return nil
	})
}

// browserFor follows redirects with cookies, sending requests for host to the Supervisor and
// others where they say, and stops at the client's loopback redirect URI.
func browserFor(t *testing.T, host string, roots *x509.CertPool) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Jar:     jar,
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if h, _, _ := net.SplitHostPort(addr); h == host {
					addr = env.address
				}
				return dialer.DialContext(ctx, network, addr)
			},
			TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		},
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(req.URL.Path, "/app/") {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
}

// startLoginUpstream runs an upstream OIDC provider that logs every user in as
// pinny@example.com at once: an oidcissuer, with the authorize and token endpoints served here
// (over HTTPS, as the Supervisor requires of every endpoint it is given).
func startLoginUpstream(t *testing.T, clientID string) *oidcissuer.Issuer {
	var (
		mu     sync.Mutex
		nonces = map[string]string{} // code -> nonce
	)
	var issuer *oidcissuer.Issuer
	authorize := func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		back, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || q.Get("client_id") != clientID {
			http.Error(w, "bad authorize request", http.StatusBadRequest)
			return
		}
		code := rand.Text()
		mu.Lock()
		nonces[code] = q.Get("nonce")
		mu.Unlock()
		back.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	}
	token := func(w http.ResponseWriter, r *http.Request) {
		resp := map[string]any{"access_token": rand.Text(), "token_type": "Bearer", "expires_in": 3600, "refresh_token": rand.Text()}
		if r.PostFormValue("grant_type") == "authorization_code" {
			mu.Lock()
			nonce, ok := nonces[r.PostFormValue("code")]
			delete(nonces, r.PostFormValue("code"))
			mu.Unlock()
			if !ok {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			idToken, err := issuer.Issue(map[string]any{
				"sub": "upstream-subject", "aud": clientID, "nonce": nonce,
				"email": "pinny@example.com", "email_verified": true, "groups": []string{"seals"},
			})
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			resp["id_token"] = idToken
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}
	issuer = oidcissuer.New(t, oidcissuer.WithEndpoint("GET /authorize", authorize), oidcissuer.WithEndpoint("POST /token", token))
	return issuer
}
