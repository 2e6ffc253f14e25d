package discovery

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"

	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/signingkeys"
)

func serve(t *testing.T, iss *issuer.Issuer) *issuer.Mux {
	t.Helper()
	m := issuer.NewMux(Endpoints{})
	if err := m.Set([]*issuer.Issuer{iss}); err != nil {
		t.Fatal(err)
	}
	return m
}

func do(t *testing.T, h http.Handler, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

// jsonBody fetches target, a JSON document: one line ended by a newline, as Pinniped's.
func jsonBody(t *testing.T, h http.Handler, target string) []byte {
	t.Helper()
	rec := do(t, h, http.MethodGet, target)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %s: %s", target, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	if body := rec.Body.String(); !strings.HasSuffix(body, "}\n") || strings.Count(body, "\n") != 1 {
		t.Errorf("GET %s: the body is not one line ended by a newline: %q", target, body)
	}
	return rec.Body.Bytes()
}

// getJSON fetches target and decodes its JSON body into a generic value.
func getJSON(t *testing.T, h http.Handler, target string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(jsonBody(t, h, target), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDiscoveryDocument(t *testing.T) {
	m := serve(t, &issuer.Issuer{URL: "https://example.com/issuer/"})
	got := getJSON(t, m, "https://example.com/issuer/.well-known/openid-configuration")
	// The wire format, field by field, as Pinniped's clients read it.
	want := map[string]any{
		"issuer":                                "https://example.com/issuer/",
		"authorization_endpoint":                "https://example.com/issuer/oauth2/authorize",
		"token_endpoint":                        "https://example.com/issuer/oauth2/token",
		"jwks_uri":                              "https://example.com/issuer/jwks.json",
		"response_types_supported":              []any{"code"},
		"response_modes_supported":              []any{"query", "form_post"},
		"subject_types_supported":               []any{"public"},
		"id_token_signing_alg_values_supported": []any{"ES256"},
		"token_endpoint_auth_methods_supported": []any{"client_secret_basic"},
		"scopes_supported":                      []any{"openid", "offline_access", "pinniped:request-audience", "username", "groups"},
		"claims_supported":                      []any{"username", "groups", "additionalClaims"},
		"code_challenge_methods_supported":      []any{"S256"},
		"discovery.supervisor.pinniped.dev/v1alpha1": map[string]any{
			"pinniped_identity_providers_endpoint": "https://example.com/issuer/v1alpha1/pinniped_identity_providers",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("discovery document (-want +got):\n%s", diff)
	}
}

func TestIdentityProvidersDocument(t *testing.T) {
	m := serve(t, &issuer.Issuer{URL: "https://example.com", IdentityProviders: []issuer.IdentityProvider{
		{DisplayName: "Corp LDAP", Type: issuer.TypeLDAP, Flows: []issuer.Flow{issuer.FlowCLIPassword, issuer.FlowBrowserAuthcode}},
		{DisplayName: "Dex", Type: issuer.TypeOIDC, Flows: []issuer.Flow{issuer.FlowBrowserAuthcode}},
	}})
	got := getJSON(t, m, "https://example.com/v1alpha1/pinniped_identity_providers")
	want := map[string]any{
		"pinniped_identity_providers": []any{
			map[string]any{"name": "Corp LDAP", "type": "ldap", "flows": []any{"cli_password", "browser_authcode"}},
			map[string]any{"name": "Dex", "type": "oidc", "flows": []any{"browser_authcode"}},
		},
		"pinniped_supported_identity_provider_types": []any{
			map[string]any{"type": "activedirectory"}, map[string]any{"type": "github"},
			map[string]any{"type": "ldap"}, map[string]any{"type": "oidc"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("IDP discovery (-want +got):\n%s", diff)
	}

	// No identity provider is an empty list, not null.
	m = serve(t, &issuer.Issuer{URL: "https://example.com"})
	if got := getJSON(t, m, "https://example.com/v1alpha1/pinniped_identity_providers").(map[string]any)["pinniped_identity_providers"]; !cmp.Equal(got, []any{}) {
		t.Errorf("no identity providers: %v", got)
	}
}

func TestJWKS(t *testing.T) {
	data, err := signingkeys.NewJWKS()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := signingkeys.ParseJWKS(data)
	if err != nil {
		t.Fatal(err)
	}
	m := serve(t, &issuer.Issuer{URL: "https://example.com/a", JWKS: keys})
	var got jose.JSONWebKeySet
	if err := json.Unmarshal(jsonBody(t, m, "https://example.com/a/jwks.json"), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Keys) != 1 || !got.Keys[0].IsPublic() || got.Keys[0].KeyID != signingkeys.KeyID || got.Keys[0].Algorithm != "ES256" {
		t.Errorf("JWKS %+v", got)
	}

	// Without keys there is no JWKS endpoint (the discovery document is still served).
	m = serve(t, &issuer.Issuer{URL: "https://example.com/a"})
	if rec := do(t, m, http.MethodGet, "https://example.com/a/jwks.json"); rec.Code != http.StatusNotFound {
		t.Errorf("JWKS without keys: %d", rec.Code)
	}
}

// The documents take GET only, as Pinniped's do: HEAD too gets 405, in Pinniped's words.
func TestMethods(t *testing.T) {
	keys, err := signingkeys.NewJWKS()
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := signingkeys.ParseJWKS(keys)
	if err != nil {
		t.Fatal(err)
	}
	m := serve(t, &issuer.Issuer{URL: "https://example.com", JWKS: jwks})
	for _, path := range []string{PathOIDCDiscovery, PathJWKS, PathIdentityProviders} {
		for _, method := range []string{http.MethodPost, http.MethodHead, http.MethodPut} {
			rec := do(t, m, method, "https://example.com"+path)
			if rec.Code != http.StatusMethodNotAllowed || rec.Body.String() != "Method not allowed (try GET)\n" {
				t.Errorf("%s %s: %d %q", method, path, rec.Code, rec.Body.String())
			}
		}
	}
	if rec := do(t, m, http.MethodGet, "https://example.com/oauth2/authorize"); rec.Code != http.StatusNotFound {
		t.Errorf("an endpoint not served yet: %d", rec.Code)
	}
}
