package discovery

import (
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

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

// getJSON fetches target and decodes its JSON body into a generic value.
func getJSON(t *testing.T, h http.Handler, target string) any {
	t.Helper()
	rec := do(t, h, http.MethodGet, target)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %s: %s", target, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	var v any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
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
		// Additions to Pinniped's document, which its clients ignore.
		"device_authorization_endpoint": "https://example.com/issuer/oauth2/device_authorization",
		"grant_types_supported": []any{"authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:token-exchange",
			"urn:ietf:params:oauth:grant-type:device_code"},
		"revocation_endpoint":                        "https://example.com/issuer/oauth2/revoke",
		"revocation_endpoint_auth_methods_supported": []any{"client_secret_basic", "none"},
		"end_session_endpoint":                       "https://example.com/issuer/oauth2/logout",
		"discovery.supervisor.pinniped.dev/v1alpha1": map[string]any{
			"pinniped_identity_providers_endpoint": "https://example.com/issuer/v1alpha1/pinniped_identity_providers",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("discovery document (-want +got):\n%s", diff)
	}

	// Byte for byte as upstream encodes it (field order, escaping and the final newline), with our
	// additions before Pinniped's own block.
	wantBody := `{"issuer":"https://example.com/issuer/","authorization_endpoint":"https://example.com/issuer/oauth2/authorize",` +
		`"token_endpoint":"https://example.com/issuer/oauth2/token","jwks_uri":"https://example.com/issuer/jwks.json",` +
		`"response_types_supported":["code"],"response_modes_supported":["query","form_post"],"subject_types_supported":["public"],` +
		`"id_token_signing_alg_values_supported":["ES256"],"token_endpoint_auth_methods_supported":["client_secret_basic"],` +
		`"scopes_supported":["openid","offline_access","pinniped:request-audience","username","groups"],` +
		`"claims_supported":["username","groups","additionalClaims"],"code_challenge_methods_supported":["S256"],` +
		`"device_authorization_endpoint":"https://example.com/issuer/oauth2/device_authorization",` +
		`"grant_types_supported":["authorization_code","refresh_token","urn:ietf:params:oauth:grant-type:token-exchange","urn:ietf:params:oauth:grant-type:device_code"],` +
		`"revocation_endpoint":"https://example.com/issuer/oauth2/revoke","revocation_endpoint_auth_methods_supported":["client_secret_basic","none"],` +
		`"end_session_endpoint":"https://example.com/issuer/oauth2/logout",` +
		`"discovery.supervisor.pinniped.dev/v1alpha1":{"pinniped_identity_providers_endpoint":"https://example.com/issuer/v1alpha1/pinniped_identity_providers"}}` + "\n"
	if rec := do(t, m, http.MethodGet, "https://example.com/issuer/.well-known/openid-configuration"); rec.Body.String() != wantBody {
		t.Errorf("discovery document bytes:\n%s\nwant:\n%s", rec.Body, wantBody)
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
	wantBody := `{"pinniped_identity_providers":[{"name":"Corp LDAP","type":"ldap","flows":["cli_password","browser_authcode"]},` +
		`{"name":"Dex","type":"oidc","flows":["browser_authcode"]}],"pinniped_supported_identity_provider_types":` +
		`[{"type":"activedirectory"},{"type":"github"},{"type":"ldap"},{"type":"oidc"}]}` + "\n"
	if rec := do(t, m, http.MethodGet, "https://example.com/v1alpha1/pinniped_identity_providers"); rec.Body.String() != wantBody {
		t.Errorf("IDP discovery bytes:\n%s\nwant:\n%s", rec.Body, wantBody)
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
	rec := do(t, m, http.MethodGet, "https://example.com/a/jwks.json")
	// Byte for byte as upstream serves the public half of its key: go-jose's field order and a
	// final newline.
	pub := keys.Public.Keys[0].Key.(*ecdsa.PublicKey)
	coord := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	point, err := pub.Bytes() // uncompressed: 0x04, then x and y of 32 bytes each
	if err != nil {
		t.Fatal(err)
	}
	want := `{"keys":[{"use":"sig","kty":"EC","kid":"pinniped-supervisor-key","crv":"P-256","alg":"ES256",` +
		`"x":"` + coord(point[1:33]) + `","y":"` + coord(point[33:]) + `"}]}` + "\n"
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != want {
		t.Errorf("JWKS: %d %s:\n%s\nwant:\n%s", rec.Code, rec.Header().Get("Content-Type"), rec.Body, want)
	}

	// Without keys the JWKS endpoint answers as upstream's does (the discovery document is still served).
	m = serve(t, &issuer.Issuer{URL: "https://example.com/a"})
	if rec := do(t, m, http.MethodGet, "https://example.com/a/jwks.json"); rec.Code != http.StatusNotFound || rec.Body.String() != "JWKS not found for requested issuer\n" {
		t.Errorf("JWKS without keys: %d %q", rec.Code, rec.Body)
	}
}

// As upstream, only GET is served; HEAD too gets 405.
func TestMethods(t *testing.T) {
	m := serve(t, &issuer.Issuer{URL: "https://example.com"})
	for _, path := range []string{"/.well-known/openid-configuration", "/v1alpha1/pinniped_identity_providers", "/jwks.json"} {
		for _, method := range []string{http.MethodPost, http.MethodHead, http.MethodPut} {
			rec := do(t, m, method, "https://example.com"+path)
			if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET" ||
				(method != http.MethodHead && rec.Body.String() != "Method not allowed (try GET)\n") {
				t.Errorf("%s %s: %d, Allow %q, %q", method, path, rec.Code, rec.Header().Get("Allow"), rec.Body)
			}
		}
	}
	if rec := do(t, m, http.MethodGet, "https://example.com/oauth2/authorize"); rec.Code != http.StatusNotFound {
		t.Errorf("an endpoint not served yet: %d", rec.Code)
	}
}
