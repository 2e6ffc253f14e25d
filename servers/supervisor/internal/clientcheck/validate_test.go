package clientcheck

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// cond is a condition as the tests compare it: status and reason, and a fragment of the message.
type cond struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

var (
	okRedirects = []configv1alpha1.RedirectURI{"https://app.example.com/callback", "http://127.0.0.1:1234/cb", "http://[::1]/cb"}
	valid       = cond{status: metav1.ConditionTrue, reason: "Success"}
)

func TestValidate(t *testing.T) {
	cheap := hash(t, bcrypt.MinCost)
	tests := []struct {
		name       string
		client     *configv1alpha1.OIDCClient
		storage    *corev1.Secret
		minCost    int
		want       map[string]cond
		wantPhase  configv1alpha1.Phase
		wantTotal  int32
		wantHashes []string
	}{
		{
			name:    "everything allowed",
			client:  client(okRedirects, []configv1alpha1.GrantType{authcode, refresh, exchange}, []configv1alpha1.Scope{openid, offline, username, groups, audience}),
			storage: storage(t, cheap, cheap), minCost: bcrypt.MinCost,
			want:      map[string]cond{"ClientSecretExists": {metav1.ConditionTrue, "Success", "2 client secret(s)"}, "AllowedGrantTypesValid": valid, "AllowedScopesValid": valid, "AllowedRedirectURIsValid": valid},
			wantPhase: "Ready", wantTotal: 2, wantHashes: []string{cheap, cheap},
		},
		{
			name:    "the smallest client",
			client:  client(okRedirects[:1], []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want:      map[string]cond{"ClientSecretExists": valid, "AllowedGrantTypesValid": valid, "AllowedScopesValid": valid, "AllowedRedirectURIsValid": valid},
			wantPhase: "Ready", wantTotal: 1, wantHashes: []string{cheap},
		},
		{
			name:   "no storage Secret",
			client: client(okRedirects, []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid}), minCost: bcrypt.MinCost,
			want:      map[string]cond{"ClientSecretExists": {metav1.ConditionFalse, "NoClientSecretFound", "OIDCClientSecretRequest"}, "AllowedGrantTypesValid": valid, "AllowedScopesValid": valid, "AllowedRedirectURIsValid": valid},
			wantPhase: "Error",
		},
		{
			name:    "every secret revoked",
			client:  client(okRedirects, []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid}),
			storage: storage(t), minCost: bcrypt.MinCost,
			want:      map[string]cond{"ClientSecretExists": {metav1.ConditionFalse, "NoClientSecretFound", "holds none"}, "AllowedGrantTypesValid": valid, "AllowedScopesValid": valid, "AllowedRedirectURIsValid": valid},
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
			minCost:   bcrypt.MinCost,
			want:      map[string]cond{"ClientSecretExists": {metav1.ConditionFalse, "NoClientSecretFound", "has type"}, "AllowedGrantTypesValid": valid, "AllowedScopesValid": valid, "AllowedRedirectURIsValid": valid},
			wantPhase: "Error",
		},
		{
			name:    "a hash too cheap or not a hash",
			client:  client(okRedirects, []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid}),
			storage: storage(t, cheap, "not-a-hash"), minCost: 12,
			want: map[string]cond{
				"ClientSecretExists":     {metav1.ConditionFalse, "InvalidClientSecretFound", "hash 0: bcrypt cost 4 is below the minimum of 12; hash 1:"},
				"AllowedGrantTypesValid": valid, "AllowedScopesValid": valid, "AllowedRedirectURIsValid": valid,
			},
			wantPhase: "Error", wantTotal: 2,
		},
		{
			name:    "grant types and scopes that need each other",
			client:  client(okRedirects, []configv1alpha1.GrantType{refresh, exchange}, []configv1alpha1.Scope{offline, audience}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: map[string]cond{
				"ClientSecretExists": valid,
				"AllowedGrantTypesValid": {metav1.ConditionFalse, "MissingRequiredValue",
					`allowedGrantTypes must include "authorization_code"`},
				"AllowedScopesValid": {metav1.ConditionFalse, "MissingRequiredValue",
					`allowedScopes must include "openid"; allowedScopes must include "username" because allowedScopes has "pinniped:request-audience"; allowedScopes must include "groups"`},
				"AllowedRedirectURIsValid": valid,
			},
			wantPhase: "Error", wantTotal: 1,
		},
		{
			name:    "offline_access without refresh_token, request-audience without token exchange",
			client:  client(okRedirects, []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid, offline, username, groups, audience}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: map[string]cond{
				"ClientSecretExists": valid,
				"AllowedGrantTypesValid": {metav1.ConditionFalse, "MissingRequiredValue",
					`"refresh_token" because allowedScopes has "offline_access"; allowedGrantTypes must include "urn:ietf:params:oauth:grant-type:token-exchange" because allowedScopes has "pinniped:request-audience"`},
				"AllowedScopesValid": valid, "AllowedRedirectURIsValid": valid,
			},
			wantPhase: "Error", wantTotal: 1,
		},
		{
			name:    "refresh_token without offline_access, token exchange without request-audience",
			client:  client(okRedirects, []configv1alpha1.GrantType{authcode, refresh, exchange}, []configv1alpha1.Scope{openid}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: map[string]cond{
				"ClientSecretExists": valid, "AllowedGrantTypesValid": valid,
				"AllowedScopesValid": {metav1.ConditionFalse, "MissingRequiredValue",
					`"offline_access" because allowedGrantTypes has "refresh_token"; allowedScopes must include "pinniped:request-audience" because`},
				"AllowedRedirectURIsValid": valid,
			},
			wantPhase: "Error", wantTotal: 1,
		},
		{
			name: "redirect URIs that are not https or loopback http",
			client: client([]configv1alpha1.RedirectURI{"http://app.example.com/cb", "https:///nohost", "https://app.example.com/cb#frag", "ftp://x/", "http://127.0.0.1.example.com/"},
				[]configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid}),
			storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: map[string]cond{
				"ClientSecretExists": valid, "AllowedGrantTypesValid": valid, "AllowedScopesValid": valid,
				"AllowedRedirectURIsValid": {metav1.ConditionFalse, "InvalidRedirectURI",
					`"http://app.example.com/cb": http is only allowed on 127.0.0.1 or [::1]; "https:///nohost": has no host; "https://app.example.com/cb#frag": must not have a fragment; "ftp://x/": must be https, or http on a loopback address; "http://127.0.0.1.example.com/": http is only`},
			},
			wantPhase: "Error", wantTotal: 1,
		},
		{
			name:   "no redirect URI",
			client: client(nil, []configv1alpha1.GrantType{authcode}, []configv1alpha1.Scope{openid}), storage: storage(t, cheap), minCost: bcrypt.MinCost,
			want: map[string]cond{
				"ClientSecretExists": valid, "AllowedGrantTypesValid": valid, "AllowedScopesValid": valid,
				"AllowedRedirectURIsValid": {metav1.ConditionFalse, "InvalidRedirectURI", "at least one is required"},
			},
			wantPhase: "Error", wantTotal: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Validate(tt.client, tt.storage, tt.minCost)
			if r.Phase != tt.wantPhase || r.TotalClientSecrets != tt.wantTotal || !cmp.Equal(r.Hashes, tt.wantHashes) {
				t.Errorf("phase %s, total %d, hashes %v; want %s, %d, %v", r.Phase, r.TotalClientSecrets, r.Hashes, tt.wantPhase, tt.wantTotal, tt.wantHashes)
			}
			got := map[string]cond{}
			for _, c := range r.Conditions {
				if c.ObservedGeneration != 3 || c.Message == "" {
					t.Errorf("condition %s: observedGeneration %d, message %q", c.Type, c.ObservedGeneration, c.Message)
				}
				want := tt.want[c.Type]
				if !strings.Contains(c.Message, want.message) {
					t.Errorf("condition %s: message %q does not contain %q", c.Type, c.Message, want.message)
				}
				got[c.Type] = cond{c.Status, c.Reason, want.message}
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(cond{})); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}
