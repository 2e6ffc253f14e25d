package conformance

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/itchyny/gojq"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	"sealion.dev/e2e/steps"
	"sealion.dev/fixtures/dex"
)

// The guide "Using an OIDC provider with Pinniped" of Kubeapps, for managed clusters, reads these
// with `kubectl get credentialissuer -o json | jq -r ...` and gives what they print to Kubeapps'
// pinniped-proxy as the cluster's API server URL and CA.
const (
	kubeappsEndpointQuery = `.items[].status.strategies[] | select(.type | contains("ImpersonationProxy")).frontend.impersonationProxyInfo.endpoint`
	kubeappsCAQuery       = `.items[].status.strategies[] | select(.type | contains("ImpersonationProxy")).frontend.impersonationProxyInfo.certificateAuthorityData`
)

// TestKubeappsManagedClusterGuide follows Kubeapps' guide to Pinniped on a managed cluster, where
// its pinniped-proxy (a Rust program, so none of our code) reaches the cluster through the
// impersonation proxy: the endpoint and CA read with the guide's jq queries agree with the load
// balancer's address and the CA Secret it names; a plain HTTP client trusting that CA exchanges an
// OIDC ID token anonymously there, as pinniped-proxy does, and its certificate is then accepted
// through the same endpoint.
func TestKubeappsManagedClusterGuide(t *testing.T) {
	var idp *dex.Dex
	var endpoint, caData string
	f := features.New("Kubeapps' pinniped-proxy on a managed cluster").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			info := steps.ClusterFrom(ctx).Info
			if info.ControlPlaneVisible || !info.HasExternalLoadBalancer || info.ClusterSigningKeyAvailable {
				t.Skip("the guide is for managed clusters: the proxy in mode auto behind its load balancer")
			}
			var err error
			if idp, err = steps.StartDexForCluster(ctx, []dex.User{dex.DefaultUser}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = idp.Close() })
			if err := steps.TrustDex(ctx, cfg, "kubeapps-dex", idp); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("the guide's queries give the load balancer's endpoint and the CA Secret's certificate", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			listeningProxy(ctx, t, cfg) // the queries read a status the proxy must have written
			out, err := steps.Kubectl(ctx, cfg.KubeconfigFile(), "", "get", "credentialissuer", "-o", "json")
			if err != nil {
				t.Fatal(err)
			}
			endpoint, caData = jqString(t, kubeappsEndpointQuery, out), jqString(t, kubeappsCAQuery, out)
			svc, err := kubeClient(t, cfg).CoreV1().Services(underTest(ctx).Concierge.Namespace).Get(ctx, underTest(ctx).Concierge.Name("impersonation-proxy-load-balancer"), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(svc.Status.LoadBalancer.Ingress) == 0 {
				t.Fatalf("the load balancer Service has no address: %+v", svc.Status)
			}
			lb := svc.Status.LoadBalancer.Ingress[0]
			address := lb.IP
			if address == "" {
				address = lb.Hostname // EKS's load balancers publish a hostname
			}
			if u, err := url.Parse(endpoint); err != nil || u.Scheme != "https" || u.Hostname() != address {
				t.Errorf("the guide's endpoint query gives %q, want https at the load balancer's %q", endpoint, address)
			}
			secret, err := kubeClient(t, cfg).CoreV1().Secrets(underTest(ctx).Concierge.Namespace).Get(ctx, underTest(ctx).Concierge.Name("impersonation-proxy-ca-certificate"), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if want := base64.StdEncoding.EncodeToString(secret.Data["ca.crt"]); caData != want {
				t.Errorf("the guide's CA query gives %q, want the Secret's ca.crt %q", caData, want)
			}
			return ctx
		}).
		Assess("pinniped-proxy's exchange and request through the endpoint", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if endpoint == "" || caData == "" {
				t.Skip("the guide's queries gave nothing")
			}
			ca, err := base64.StdEncoding.DecodeString(caData)
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(ca) {
				t.Fatalf("the CA data holds no certificate: %q", ca)
			}
			token := dexPasswordGrant(ctx, t, idp, dex.DefaultUser)
			var tcr loginv1alpha1.TokenCredentialRequest
			status := postJSON(ctx, t, &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}},
				endpoint+"/apis/"+underTest(ctx).Group("login.concierge.pinniped.dev")+"/v1alpha1/tokencredentialrequests", map[string]any{
					"apiVersion": underTest(ctx).Group("login.concierge.pinniped.dev") + "/v1alpha1",
					"kind":       "TokenCredentialRequest",
					"spec": map[string]any{
						"token":         token,
						"authenticator": map[string]any{"apiGroup": underTest(ctx).Group("authentication.concierge.pinniped.dev"), "kind": "JWTAuthenticator", "name": "kubeapps-dex"},
					},
				}, &tcr)
			if status != http.StatusCreated || tcr.Status.Credential == nil {
				t.Fatalf("anonymous TokenCredentialRequest at %s: %d, %+v", endpoint, status, tcr.Status)
			}
			pair, err := tls.X509KeyPair([]byte(tcr.Status.Credential.ClientCertificateData), []byte(tcr.Status.Credential.ClientKeyData))
			if err != nil {
				t.Fatal(err)
			}
			withCert := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}}}}
			var review authenticationv1.SelfSubjectReview
			status = postJSON(ctx, t, withCert, endpoint+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
				map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, &review)
			user := review.Status.UserInfo
			if status != http.StatusCreated || user.Username != dex.DefaultUser.Email || !slices.Contains(user.Groups, "seals") {
				t.Errorf("through the endpoint with the certificate the cluster sees %d %+v, want %s in seals", status, user, dex.DefaultUser.Email)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// jqString runs query on the JSON document doc and returns its one string result, failing the
// test on anything else, as `jq -r` would show a user something unexpected.
func jqString(t *testing.T, query, doc string) string {
	t.Helper()
	q, err := gojq.Parse(query)
	if err != nil {
		t.Fatal(err)
	}
	var input any
	if err := json.Unmarshal([]byte(doc), &input); err != nil {
		t.Fatal(err)
	}
	var results []string
	iter := q.Run(input)
	for {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := v.(error); ok {
			t.Fatalf("jq %s: %v", query, err)
		}
		s, ok := v.(string)
		if !ok {
			t.Fatalf("jq %s gives %v, not a string", query, v)
		}
		results = append(results, s)
	}
	if len(results) != 1 {
		t.Fatalf("jq %s gives %d results %q, want one", query, len(results), results)
	}
	return results[0]
}

// dexPasswordGrant gets an ID token for u from Dex with the resource owner password grant, which
// stands for the login Kubeapps' own OAuth2 proxy does in a browser.
func dexPasswordGrant(ctx context.Context, t *testing.T, idp *dex.Dex, u dex.User) string {
	t.Helper()
	form := url.Values{
		"grant_type": {"password"},
		"username":   {u.Email},
		"password":   {u.Password},
		"scope":      {"openid email groups"},
		"client_id":  {dex.PublicClientID},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, idp.IssuerURL+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(dex.PublicClientID, "")
	resp, err := idp.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tokens struct {
		IDToken string `json:"id_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tokens) != nil || tokens.IDToken == "" {
		t.Fatalf("Dex password grant: %s: %s", resp.Status, body)
	}
	return tokens.IDToken
}

// postJSON posts body as JSON with client, decodes the answer into out and returns the status.
func postJSON(ctx context.Context, t *testing.T, client *http.Client, url string, body, out any) int {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(answer, out); err != nil {
		t.Fatalf("POST %s: %s: %q is not the JSON expected: %v", url, resp.Status, answer, err)
	}
	return resp.StatusCode
}
