package sessions

import (
	"context"
	"encoding/json"
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
)

// pinnipedRefreshToken is a refresh token record as a Pinniped Supervisor writes it, for an OIDC
// login: the client in full, the upstream refresh token in clear, warnings and an empty upstream
// access token that we do not write, no "active".
const pinnipedRefreshToken = `{"request":{"id":"login-9","requestedAt":"2026-01-02T03:04:05Z",` +
	`"client":{"id":"pinniped-cli","client_secret":null,"rotated_secrets":null,"redirect_uris":["http://127.0.0.1/callback"],` +
	`"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"scopes":["openid","offline_access"],` +
	`"audience":null,"public":true,"jwks_uri":"","jwks":null,"token_endpoint_auth_method":"none","request_uris":null,` +
	`"request_object_signing_alg":"","token_endpoint_auth_signing_alg":"RS256","IDTokenLifetimeConfiguration":0},` +
	`"scopes":["openid","offline_access"],"grantedScopes":["openid","offline_access"],"form":{"client_id":["pinniped-cli"]},` +
	`"session":{"fosite":{"id_token_claims":{"jti":"","iss":"https://issuer.example.com","sub":"https://dex.example.com?idpName=dex\u0026sub=sub",` +
	`"aud":["pinniped-cli"],"nonce":"","exp":"0001-01-01T00:00:00Z","iat":"0001-01-01T00:00:00Z","rat":"2026-01-02T03:04:05Z",` +
	`"auth_time":"2026-01-02T03:04:05Z","at_hash":"","acr":"","amr":null,"c_hash":"","ext":{"username":"pinny"}},` +
	`"headers":{"extra":{}},"expires_at":{"refresh_token":"2026-01-02T12:04:05Z"},"username":"","subject":""},` +
	`"custom":{"username":"pinny","upstreamUsername":"pinny@example.com","upstreamGroups":["seals"],"providerUID":"idp-uid",` +
	`"providerName":"upstream-idp","providerType":"oidc","warnings":null,"oidc":{"upstreamRefreshToken":"plain-upstream-refresh",` +
	`"upstreamAccessToken":"","upstreamSubject":"sub","upstreamIssuer":"https://dex.example.com"}}},` +
	`"requestedAudience":null,"grantedAudience":null},"version":"8"}`

func pinnipedSecret(kind, requestID, data string, gcAfter time.Time) *corev1.Secret {
	labels := map[string]string{TypeLabel: kind}
	if requestID != "" {
		labels[RequestIDLabel] = requestID
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "pinniped-storage-" + kind + "-" + signatureName, Namespace: namespace, Labels: labels,
			Annotations: map[string]string{GarbageCollectAfterAnnotation: gcAfter.UTC().Format(time.RFC3339)},
		},
		Type: corev1.SecretType("storage.pinniped.dev/" + kind),
		Data: map[string][]byte{"pinniped-storage-data": []byte(data), "pinniped-storage-version": []byte("1")},
	}
}

// A refresh token that a Pinniped Supervisor stored (during a rolling migration) is found by its
// token's signature and read in full, its upstream token in clear.
func TestReadsPinnipedRefreshToken(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)
	clientset := fake.NewClientset(pinnipedSecret(typeRefreshToken, "login-9", pinnipedRefreshToken, now.Add(time.Hour)))
	store, _ := formatFixture(clientset, now)
	req, err := store.GetRefreshTokenSession(ctx, signature, NewSession())
	if err != nil {
		t.Fatal(err)
	}
	s := req.GetSession().(*Session)
	if req.GetID() != "login-9" || req.GetClient().GetID() != "pinniped-cli" || !req.GetGrantedScopes().Has("offline_access") {
		t.Errorf("request %s of %s, granted %v", req.GetID(), req.GetClient().GetID(), req.GetGrantedScopes())
	}
	if s.Claims.Subject != "https://dex.example.com?idpName=dex&sub=sub" || !s.GetExpiresAt(fosite.RefreshToken).Equal(time.Date(2026, 1, 2, 12, 4, 5, 0, time.UTC)) {
		t.Errorf("fosite session: sub %q, refresh token expiry %v", s.Claims.Subject, s.GetExpiresAt(fosite.RefreshToken))
	}
	c := s.Custom
	if c.Username != "pinny" || c.UpstreamUsername != "pinny@example.com" || c.ProviderResource != "upstream-idp" || c.ProviderUID != "idp-uid" ||
		c.ProviderType != "oidc" || c.OIDC == nil || c.OIDC.UpstreamRefreshToken != "plain-upstream-refresh" || c.OIDC.UpstreamSubject != "sub" {
		t.Errorf("custom session %+v, oidc %+v", c, c.OIDC)
	}
}

// The garbage collector revokes the upstream token of an expired login that Pinniped stored.
func TestGarbageCollectRevokesPinnipedSession(t *testing.T) {
	now := time.Date(2026, 1, 2, 13, 0, 0, 0, time.UTC)
	clientset := fake.NewClientset(pinnipedSecret(typeRefreshToken, "login-9", pinnipedRefreshToken, now.Add(-time.Minute)))
	r := &revoker{}
	s := NewStorage(clientset.CoreV1().Secrets(namespace), oneConnector{r}, sessionstest.Keys())
	s.now = func() time.Time { return now }
	if n, err := s.GarbageCollect(context.Background()); n != 1 || err != nil {
		t.Fatalf("GarbageCollect() = %d, %v; want 1 deleted", n, err)
	}
	if len(r.revoked) != 1 || r.revoked[0] != "plain-upstream-refresh" {
		t.Errorf("revoked %v, want the upstream refresh token of the Pinniped session", r.revoked)
	}
}

// An Active Directory login's session is stored under "activedirectory", as Pinniped's, and
// either is read.
func TestActiveDirectorySessionKey(t *testing.T) {
	c := CustomSessionData{ProviderType: string(issuer.TypeActiveDirectory), ProviderResource: "corp-ad",
		Session: connectors.Session{LDAP: &connectors.LDAPSession{UserDN: "cn=pinny,dc=corp", ExtraRefreshAttributes: map[string]string{"pwdLastSet": "1"}}}}
	stored, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stored), `"activedirectory":{"userDN":"cn=pinny,dc=corp"`) || strings.Contains(string(stored), `"ldap"`) {
		t.Errorf("stored %s; want the session under activedirectory only", stored)
	}
	var back CustomSessionData
	if err := json.Unmarshal(stored, &back); err != nil || back.LDAP == nil || back.LDAP.UserDN != "cn=pinny,dc=corp" || back.LDAP.ExtraRefreshAttributes["pwdLastSet"] != "1" {
		t.Errorf("read back %+v (%v)", back.LDAP, err)
	}
	ldap := CustomSessionData{ProviderType: string(issuer.TypeLDAP), Session: connectors.Session{LDAP: &connectors.LDAPSession{UserDN: "uid=pinny"}}}
	if stored, _ := json.Marshal(ldap); !strings.Contains(string(stored), `"ldap":{"userDN":"uid=pinny"`) || strings.Contains(string(stored), "activedirectory") {
		t.Errorf("an LDAP login stored %s; want it under ldap", stored)
	}
}
