package clientcheck

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
)

const (
	authcode = configv1alpha1.GrantTypeAuthorizationCode
	refresh  = configv1alpha1.GrantTypeRefreshToken
	exchange = configv1alpha1.GrantTypeTokenExchange

	openid   = configv1alpha1.ScopeOpenID
	offline  = configv1alpha1.ScopeOfflineAccess
	username = configv1alpha1.ScopeUsername
	groups   = configv1alpha1.ScopeGroups
	audience = configv1alpha1.ScopeRequestAudience
)

func hash(t *testing.T, cost int) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte("secret"), cost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func storage(t *testing.T, hashes ...string) *corev1.Secret {
	t.Helper()
	data, err := json.Marshal(map[string]any{"hashes": hashes, "version": "1"})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "storage", Labels: map[string]string{clientsecrets.TypeLabelKey: clientsecrets.TypeLabelValue}},
		Type:       clientsecrets.SecretType,
		Data:       map[string][]byte{"pinniped-storage-version": []byte("1"), "pinniped-storage-data": data},
	}
}

func client(redirects []configv1alpha1.RedirectURI, grants []configv1alpha1.GrantType, scopes []configv1alpha1.Scope) *configv1alpha1.OIDCClient {
	return &configv1alpha1.OIDCClient{
		ObjectMeta: metav1.ObjectMeta{Name: "client.oauth.pinniped.dev-app", Generation: 3},
		Spec:       configv1alpha1.OIDCClientSpec{AllowedRedirectURIs: redirects, AllowedGrantTypes: grants, AllowedScopes: scopes},
	}
}

// Upstream Pinniped's conditions, each with the client's generation.
func wantCond(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: 3}
}

var (
	okRedirects  = []configv1alpha1.RedirectURI{"https://app.example.com/callback", "http://127.0.0.1:1234/cb", "http://[::1]/cb"}
	grantTypesOK = wantCond("AllowedGrantTypesValid", metav1.ConditionTrue, "Success", `"allowedGrantTypes" is valid`)
	scopesOK     = wantCond("AllowedScopesValid", metav1.ConditionTrue, "Success", `"allowedScopes" is valid`)
)

func secrets(status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return wantCond("ClientSecretExists", status, reason, message)
}

func grantTypes(message string) metav1.Condition {
	return wantCond("AllowedGrantTypesValid", metav1.ConditionFalse, "MissingRequiredValue", message)
}

func scopes(message string) metav1.Condition {
	return wantCond("AllowedScopesValid", metav1.ConditionFalse, "MissingRequiredValue", message)
}

func TestValidate(t *testing.T) {
	cheap := hash(t, bcrypt.MinCost)
	oneSecret := secrets(metav1.ConditionTrue, "Success", "1 client secret(s) found")
	withLifetimes := func(l *configv1alpha1.SessionLifetimes) *configv1alpha1.OIDCClient {
		c := client(okRedirects, []configv1alpha1.GrantType{authcode, refresh}, []configv1alpha1.Scope{openid, offline})
		c.Spec.SessionLifetimes = l
		return c
	}
	withPostLogout := func(uris []configv1alpha1.RedirectURI) *configv1alpha1.OIDCClient {
		c := client(okRedirects, []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid})
		c.Spec.AllowedPostLogoutRedirectURIs = uris
		return c
	}
	tests := []struct {
		name       string
		client     *configv1alpha1.OIDCClient
		storage    *corev1.Secret
		minCost    int
		want       []metav1.Condition // in order
		wantPhase  configv1alpha1.Phase
		wantTotal  int32
		wantHashes []string
	}{
		{
			name:    "everything allowed",
			client:  client(okRedirects, []configv1alpha1.GrantType{authcode, refresh, exchange}, []configv1alpha1.Scope{openid, offline, username, groups, audience}),
			storage: storage(t, cheap, cheap), minCost: bcrypt.MinCost,
			want:      []metav1.Condition{grantTypesOK, scopesOK, secrets(metav1.ConditionTrue, "Success", "2 client secret(s) found")},
			wantPhase: "Ready", wantTotal: 2, wantHashes: []string{cheap, cheap},
		},
		{
			name:    "the smallest client",
			client:  client(okRedirects[:1], []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want:      []metav1.Condition{grantTypesOK, scopesOK, oneSecret},
			wantPhase: "Ready", wantTotal: 1, wantHashes: []string{cheap},
		},
		{
			name:   "no storage Secret",
			client: client(okRedirects, []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid}), minCost: bcrypt.MinCost,
			want:      []metav1.Condition{grantTypesOK, scopesOK, secrets(metav1.ConditionFalse, "NoClientSecretFound", "no client secret found (no Secret storage found)")},
			wantPhase: "Error",
		},
		{
			name:    "every secret revoked",
			client:  client(okRedirects, []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid}),
			storage: storage(t), minCost: bcrypt.MinCost,
			want:      []metav1.Condition{grantTypesOK, scopesOK, secrets(metav1.ConditionFalse, "NoClientSecretFound", "no client secret found (empty list in storage)")},
			wantPhase: "Error",
		},
		{
			name:   "unreadable storage",
			client: client(okRedirects, []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid}),
			storage: func() *corev1.Secret {
				s := storage(t, cheap)
				s.Type = corev1.SecretTypeOpaque
				return s
			}(),
			minCost: bcrypt.MinCost,
			want: []metav1.Condition{grantTypesOK, scopesOK, secrets(metav1.ConditionFalse, "NoClientSecretFound",
				`error reading client secret storage: invalid OIDC client secret storage: Secret storage has type "Opaque", want "storage.pinniped.dev/oidc-client-secret"`)},
			wantPhase: "Error",
		},
		{
			name:    "a hash too cheap or not a hash: none is used or counted",
			client:  client(okRedirects, []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid}),
			storage: storage(t, cheap, "not-a-hash"), minCost: 12,
			want: []metav1.Condition{grantTypesOK, scopesOK, secrets(metav1.ConditionFalse, "InvalidClientSecretFound",
				"2 stored client secrets found, but some were invalid, so none will be used: hashed client secret at index 0: bcrypt cost 4 is below the required minimum of 12; "+
					"hashed client secret at index 1: crypto/bcrypt: hashedSecret too short to be a bcrypted password")},
			wantPhase: "Error",
		},
		{
			name:    "grant types and scopes that need each other",
			client:  client(okRedirects, []configv1alpha1.GrantType{refresh, exchange}, []configv1alpha1.Scope{offline, audience}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: []metav1.Condition{
				grantTypes(`"authorization_code" must always be included in "allowedGrantTypes"`),
				scopes(`"openid" must always be included in "allowedScopes"; "username" and "groups" must be included in "allowedScopes" when "pinniped:request-audience" is included in "allowedScopes"`),
				oneSecret,
			},
			wantPhase: "Error", wantTotal: 1,
		},
		{
			name:    "request-audience with groups but not username",
			client:  client(okRedirects, []configv1alpha1.GrantType{authcode, exchange}, []configv1alpha1.Scope{openid, groups, audience}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: []metav1.Condition{
				grantTypesOK,
				scopes(`"username" and "groups" must be included in "allowedScopes" when "pinniped:request-audience" is included in "allowedScopes"`),
				oneSecret,
			},
			wantPhase: "Error", wantTotal: 1,
		},
		{
			name:    "offline_access without refresh_token, request-audience without token exchange",
			client:  client(okRedirects, []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid, offline, username, groups, audience}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: []metav1.Condition{
				grantTypes(`"refresh_token" must be included in "allowedGrantTypes" when "offline_access" is included in "allowedScopes"; ` +
					`"urn:ietf:params:oauth:grant-type:token-exchange" must be included in "allowedGrantTypes" when "pinniped:request-audience" is included in "allowedScopes"`),
				scopesOK, oneSecret,
			},
			wantPhase: "Error", wantTotal: 1,
		},
		{
			name:    "refresh_token without offline_access, token exchange without request-audience",
			client:  client(okRedirects, []configv1alpha1.GrantType{authcode, refresh, exchange}, []configv1alpha1.Scope{openid}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: []metav1.Condition{
				grantTypesOK,
				scopes(`"offline_access" must be included in "allowedScopes" when "refresh_token" is included in "allowedGrantTypes"; ` +
					`"pinniped:request-audience" must be included in "allowedScopes" when "urn:ietf:params:oauth:grant-type:token-exchange" is included in "allowedGrantTypes"`),
				oneSecret,
			},
			wantPhase: "Error", wantTotal: 1,
		},
		{
			name: "redirect URIs that are not https or loopback http",
			client: client([]configv1alpha1.RedirectURI{"http://app.example.com/cb", "https:///nohost", "https://app.example.com/cb#frag", "ftp://x/", "http://127.0.0.1.example.com/"},
				[]configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: []metav1.Condition{
				grantTypesOK,
				wantCond("AllowedRedirectURIsValid", metav1.ConditionFalse, "InvalidRedirectURI",
					`allowedRedirectURIs: "http://app.example.com/cb": http is only allowed on 127.0.0.1 or [::1]; "https:///nohost": has no host; "https://app.example.com/cb#frag": must not have a fragment; "ftp://x/": must be https, or http on a loopback address; "http://127.0.0.1.example.com/": http is only allowed on 127.0.0.1 or [::1]`),
				scopesOK, oneSecret,
			},
			wantPhase: "Error", wantTotal: 1,
		},
		{
			name:    "post-logout redirect URIs that are not a URL or have a fragment (the CRD's pattern admits both)",
			client:  withPostLogout([]configv1alpha1.RedirectURI{"https://app.example.com/signed-out", "https://app.example.com/%zz", "https://app.example.com/out#frag"}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: []metav1.Condition{
				grantTypesOK,
				wantCond("AllowedPostLogoutRedirectURIsValid", metav1.ConditionFalse, "InvalidRedirectURI",
					`allowedPostLogoutRedirectURIs: "https://app.example.com/%zz": not a URL; "https://app.example.com/out#frag": must not have a fragment`),
				scopesOK, oneSecret,
			},
			wantPhase: "Error", wantTotal: 1,
		},
		{
			name:    "valid post-logout redirect URIs: no condition of ours",
			client:  withPostLogout([]configv1alpha1.RedirectURI{"https://app.example.com/signed-out", "http://127.0.0.1/out"}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want:      []metav1.Condition{grantTypesOK, scopesOK, oneSecret},
			wantPhase: "Ready", wantTotal: 1, wantHashes: []string{cheap},
		},
		{
			name:   "no redirect URI",
			client: client(nil, []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid}), storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: []metav1.Condition{
				grantTypesOK,
				wantCond("AllowedRedirectURIsValid", metav1.ConditionFalse, "InvalidRedirectURI", "allowedRedirectURIs: at least one is required"),
				scopesOK, oneSecret,
			},
			wantPhase: "Error", wantTotal: 1,
		},
		{
			name:    "session lifetimes within bounds",
			client:  withLifetimes(&configv1alpha1.SessionLifetimes{MaxSessionSeconds: ptr.To[int32](3600), IdleTimeoutSeconds: ptr.To[int32](600)}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: []metav1.Condition{grantTypesOK, scopesOK, oneSecret,
				wantCond("SessionLifetimesValid", metav1.ConditionTrue, "Success", `"spec.sessionLifetimes" is valid; each value shortens the FederationDomain's where it is shorter`)},
			wantPhase: "Ready", wantTotal: 1, wantHashes: []string{cheap},
		},
		{
			name:    "an idle timeout over the session's maximum (which the CRD admits)",
			client:  withLifetimes(&configv1alpha1.SessionLifetimes{MaxSessionSeconds: ptr.To[int32](600), IdleTimeoutSeconds: ptr.To[int32](900)}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: []metav1.Condition{grantTypesOK, scopesOK, oneSecret,
				wantCond("SessionLifetimesValid", metav1.ConditionFalse, "InvalidSessionLifetimes", "spec.sessionLifetimes.idleTimeoutSeconds (900) must not exceed the session's maximum length (600 seconds)")},
			wantPhase: "Error", wantTotal: 1,
		},
		{
			name:    "session lifetimes out of bounds (stored under an older CRD)",
			client:  withLifetimes(&configv1alpha1.SessionLifetimes{IdleTimeoutSeconds: ptr.To[int32](30)}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: []metav1.Condition{grantTypesOK, scopesOK, oneSecret,
				wantCond("SessionLifetimesValid", metav1.ConditionFalse, "InvalidSessionLifetimes", "spec.sessionLifetimes.idleTimeoutSeconds must be between 60 and 604800, not 30")},
			wantPhase: "Error", wantTotal: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Validate(tt.client, tt.storage, tt.minCost)
			if r.Phase != tt.wantPhase || r.TotalClientSecrets != tt.wantTotal || !cmp.Equal(r.Hashes, tt.wantHashes) {
				t.Errorf("phase %s, total %d, hashes %v; want %s, %d, %v", r.Phase, r.TotalClientSecrets, r.Hashes, tt.wantPhase, tt.wantTotal, tt.wantHashes)
			}
			if diff := cmp.Diff(tt.want, r.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}
