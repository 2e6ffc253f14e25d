package sessions

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ory/fosite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/sessions/sessionstest"
	"sealion.dev/servers/supervisor/internal/sessionpolicy"
)

// signature is a token signature as fosite's HMAC strategy makes them (base64url of 32 bytes),
// and signatureName the lower-case base32 of those bytes that Pinniped names its Secret with.
const (
	signature     = "GcppChpvMYG9SWLzf1A2zqW-hxns7D5NymByRQ9umyo"
	signatureName = "dhfgscq2n4yydpkjmlzx6ubwz2s35byz5twd4tokmbzekd3otmva"
)

// pinnipedShape is the JSON of each stored record as Pinniped documents it (the keys of its
// fositestorage and psession types, storage version 8), per object in the record: "" for the
// record itself, then the path of each object within it.
var pinnipedShape = map[string][]string{
	"":                                       {"request", "version"},
	"request":                                {"id", "requestedAt", "client", "scopes", "grantedScopes", "form", "session", "requestedAudience", "grantedAudience"},
	"request.client":                         {"id", "client_secret", "rotated_secrets", "redirect_uris", "grant_types", "response_types", "scopes", "audience", "public", "jwks_uri", "jwks", "token_endpoint_auth_method", "request_uris", "request_object_signing_alg", "token_endpoint_auth_signing_alg", "IDTokenLifetimeConfiguration"},
	"request.form":                           nil, // the request's parameters
	"request.session":                        {"fosite", "custom"},
	"request.session.fosite":                 {"id_token_claims", "headers", "expires_at", "username", "subject"},
	"request.session.fosite.id_token_claims": {"jti", "iss", "sub", "aud", "nonce", "exp", "iat", "rat", "auth_time", "at_hash", "acr", "amr", "c_hash", "ext"},
	"request.session.fosite.id_token_claims.ext": nil, // the ID token's other claims
	"request.session.fosite.headers":             {"extra"},
	"request.session.fosite.headers.extra":       nil,
	"request.session.fosite.expires_at":          nil, // by token type
	"request.session.custom":                     {"username", "upstreamUsername", "upstreamGroups", "providerUID", "providerName", "providerType", "warnings", "oidc", "ldap", "activedirectory", "github"},
	"request.session.custom.oidc":                {"upstreamRefreshToken", "upstreamAccessToken", "upstreamSubject", "upstreamIssuer"},
	"request.session.custom.additionalClaims":    nil,
}

// Where our records differ from Pinniped's shape, on purpose (see the package doc): keys Pinniped
// has that we do not write, and keys we add, which Pinniped's readers ignore.
var (
	notWritten = []string{
		// No secret (hash) of the client is stored, nor what the Supervisor never reads back.
		"request.client.client_secret", "request.client.rotated_secrets", "request.client.jwks_uri", "request.client.jwks",
		"request.client.token_endpoint_auth_method", "request.client.request_uris", "request.client.request_object_signing_alg",
		"request.client.token_endpoint_auth_signing_alg", "request.client.IDTokenLifetimeConfiguration",
		// The Supervisor has no login warnings.
		"request.session.custom.warnings",
		// Only one kind of upstream session is written.
		"request.session.custom.ldap", "request.session.custom.activedirectory", "request.session.custom.github",
	}
	added = []string{
		"request.session.custom.groups", "request.session.custom.providerDisplayName", "request.session.custom.loginTime",
		"request.session.custom.additionalClaims", "request.session.custom.federationDomain",
	}
)

// pinnipedStorageLifetimes are how long Pinniped keeps each kind of record from its creation; ours
// are the same for a session of the default policy that started at the record's creation.
var pinnipedStorageLifetimes = map[string]time.Duration{
	typeAuthcode:     10*time.Minute + 9*time.Hour,
	typeAccessToken:  9*time.Hour + 2*time.Minute,
	typeRefreshToken: 9*time.Hour + 2*time.Minute,
	typePKCE:         11 * time.Minute,
	typeOIDC:         11 * time.Minute,
}

// formatFixture returns a store with a fixed clock and a request of a finished OIDC login.
func formatFixture(clientset *fake.Clientset, now time.Time) (*Store, *fosite.Request) {
	client := &fosite.DefaultClient{ID: "pinniped-cli", Public: true, RedirectURIs: []string{"http://127.0.0.1/callback"},
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}, Scopes: []string{"openid", "offline_access"}}
	storage := NewStorage(clientset.CoreV1().Secrets(namespace), noConnectors{}, sessionstest.Keys())
	storage.now = func() time.Time { return now }
	sess := NewSession()
	sess.Claims.Issuer, sess.Claims.Subject = "https://issuer.example.com", "https://dex.example.com?idpName=My+Dex&sub=sub"
	sess.Subject, sess.Claims.RequestedAt = sess.Claims.Subject, now
	sess.Claims.Extra = map[string]any{AdditionalClaimsClaim: map[string]any{"email": "pinny@example.com"}}
	sess.SetExpiresAt(fosite.RefreshToken, now.Add(sessionpolicy.Default.Max))
	sess.Custom = CustomSessionData{
		Username: "pinny", Groups: []string{"seals"}, UpstreamUsername: "pinny@example.com", UpstreamGroups: []string{"seals"},
		ProviderName: "My Dex", ProviderResource: "upstream-idp", ProviderUID: "idp-uid", ProviderType: string(issuer.TypeOIDC), LoginTime: now,
		FederationDomain: "production",
		Session:          connectors.Session{OIDC: &connectors.OIDCSession{UpstreamIssuer: "https://dex.example.com", UpstreamSubject: "sub", UpstreamRefreshToken: refreshToken}},
		AdditionalClaims: map[string]any{"email": "pinny@example.com"},
	}
	req := fosite.NewRequest()
	req.ID, req.RequestedAt, req.Client, req.Session = "login-1", now, client, sess
	req.RequestedScope, req.GrantedScope = fosite.Arguments{"openid", "offline_access"}, fosite.Arguments{"openid", "offline_access"}
	req.Form.Set("client_id", "pinniped-cli")
	return storage.ForClients(oneClient{client}), req
}

// Every kind of record is stored as Pinniped stores it: the Secret's name, type, labels,
// annotation, data keys and versions, and the JSON record, key by key.
func TestStoredAsPinniped(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	creators := map[string]func(*Store, *fosite.Request) error{
		typeAuthcode:     func(s *Store, r *fosite.Request) error { return s.CreateAuthorizeCodeSession(ctx, signature, r) },
		typeAccessToken:  func(s *Store, r *fosite.Request) error { return s.CreateAccessTokenSession(ctx, signature, r) },
		typeRefreshToken: func(s *Store, r *fosite.Request) error { return s.CreateRefreshTokenSession(ctx, signature, "", r) },
		typePKCE:         func(s *Store, r *fosite.Request) error { return s.CreatePKCERequestSession(ctx, signature, r) },
		typeOIDC:         func(s *Store, r *fosite.Request) error { return s.CreateOpenIDConnectSession(ctx, signature, r) },
	}
	for kind, create := range creators {
		t.Run(kind, func(t *testing.T) {
			clientset := fake.NewClientset()
			store, req := formatFixture(clientset, now)
			if err := create(store, req); err != nil {
				t.Fatal(err)
			}
			secret, err := clientset.CoreV1().Secrets(namespace).Get(ctx, "pinniped-storage-"+kind+"-"+signatureName, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("Pinniped's name: %v", err)
			}
			if want := corev1.SecretType("storage.pinniped.dev/" + kind); secret.Type != want {
				t.Errorf("type %q, want %q", secret.Type, want)
			}
			want := map[string]string{"storage.pinniped.dev/type": kind, "storage.pinniped.dev/request-id": "login-1"}
			if slices.Contains(loginKinds, kind) { // ours, which Pinniped ignores
				want[LoginLabel] = LoginKey("https://dex.example.com?idpName=My+Dex&sub=sub", "pinniped-cli", now.Unix())
			}
			if !maps.Equal(secret.Labels, want) {
				t.Errorf("labels %v, want %v", secret.Labels, want)
			}
			wantGC := now.Add(pinnipedStorageLifetimes[kind]).Format(time.RFC3339)
			if want := map[string]string{"storage.pinniped.dev/garbage-collect-after": wantGC}; !maps.Equal(secret.Annotations, want) {
				t.Errorf("annotations %v, want %v", secret.Annotations, want)
			}
			if keys := slices.Sorted(maps.Keys(secret.Data)); !slices.Equal(keys, []string{"pinniped-storage-data", "pinniped-storage-version"}) {
				t.Errorf("data keys %v", keys)
			}
			if v := string(secret.Data["pinniped-storage-version"]); v != "1" {
				t.Errorf("pinniped-storage-version %q, want Pinniped's \"1\"", v)
			}

			var rec map[string]any
			if err := json.Unmarshal(secret.Data["pinniped-storage-data"], &rec); err != nil {
				t.Fatal(err)
			}
			shape := maps.Clone(pinnipedShape)
			switch kind {
			case typeAuthcode:
				shape[""] = append(slices.Clone(shape[""]), "active")
			case typeRefreshToken:
				// Refresh tokens say whether they were rotated (Pinniped deletes them instead).
				shape[""] = append(slices.Clone(shape[""]), "active")
			}
			compareShape(t, "", rec, shape)

			request := rec["request"].(map[string]any)
			session := request["session"].(map[string]any)
			custom := session["custom"].(map[string]any)
			oidc := custom["oidc"].(map[string]any)
			for path, got := range map[string]any{
				"version": rec["version"], "request.id": request["id"], "request.requestedAt": request["requestedAt"],
				"request.client.id": request["client"].(map[string]any)["id"], "request.scopes": request["scopes"],
				"request.session.fosite.expires_at.refresh_token": session["fosite"].(map[string]any)["expires_at"].(map[string]any)["refresh_token"],
				"request.session.fosite.id_token_claims.sub":      session["fosite"].(map[string]any)["id_token_claims"].(map[string]any)["sub"],
				"custom.username": custom["username"], "custom.upstreamUsername": custom["upstreamUsername"],
				"custom.providerName": custom["providerName"], "custom.providerUID": custom["providerUID"], "custom.providerType": custom["providerType"],
				"custom.oidc.upstreamSubject": oidc["upstreamSubject"], "custom.oidc.upstreamIssuer": oidc["upstreamIssuer"],
			} {
				want := map[string]any{
					"version": "8", "request.id": "login-1", "request.requestedAt": "2026-01-02T03:04:05Z", "request.client.id": "pinniped-cli",
					"request.scopes": []any{"openid", "offline_access"},
					"request.session.fosite.expires_at.refresh_token": "2026-01-02T12:04:05Z",
					"request.session.fosite.id_token_claims.sub":      "https://dex.example.com?idpName=My+Dex&sub=sub",
					"custom.username": "pinny", "custom.upstreamUsername": "pinny@example.com",
					"custom.providerName": "upstream-idp", "custom.providerUID": "idp-uid", "custom.providerType": "oidc",
					"custom.oidc.upstreamSubject": "sub", "custom.oidc.upstreamIssuer": "https://dex.example.com",
				}[path]
				if gotJSON, _ := json.Marshal(got); string(gotJSON) != mustJSON(want) {
					t.Errorf("%s = %s, want %s", path, gotJSON, mustJSON(want))
				}
			}
			// Unlike Pinniped, upstream tokens are sealed (see the package doc).
			if token, _ := oidc["upstreamRefreshToken"].(string); !strings.HasPrefix(token, "sealed:v1:") {
				t.Errorf("upstreamRefreshToken %q is not sealed", token)
			}
			if active, ok := rec["active"]; (kind == typeAuthcode || kind == typeRefreshToken) && active != true {
				t.Errorf("active = %v (present %v), want true", active, ok)
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// compareShape reports the keys of the object at path in got that differ from shape, less the
// known differences (notWritten, added).
func compareShape(t *testing.T, path string, got map[string]any, shape map[string][]string) {
	t.Helper()
	want, ok := shape[path]
	if !ok {
		t.Errorf("%s: an object where Pinniped has none", path)
		return
	}
	if want == nil {
		return // a map of values, not a fixed set of keys
	}
	join := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	for _, key := range want {
		if _, ok := got[key]; !ok && !slices.Contains(notWritten, join(key)) {
			t.Errorf("%s: missing", join(key))
		}
	}
	for key, value := range got {
		if !slices.Contains(want, key) && !slices.Contains(added, join(key)) {
			t.Errorf("%s: not in Pinniped's record", join(key))
		}
		if obj, ok := value.(map[string]any); ok && !slices.Contains(added, join(key)) {
			compareShape(t, join(key), obj, shape)
		}
	}
}
