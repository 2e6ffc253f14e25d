package sessions

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ory/fosite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/sessions/sessionstest"
	"sealion.dev/servers/supervisor/internal/tokenseal"
)

// storeLogin stores the records of a finished login of username, whose upstream refresh token is
// upstreamRefresh: its refresh and access tokens and its PKCE request.
func storeLogin(t *testing.T, store *Store, id, username, upstreamRefresh string) {
	t.Helper()
	storeLoginAt(t, store, id, username, upstreamRefresh, time.Now())
}

// storeLoginAt stores a login as storeLogin, that started at loginAt.
func storeLoginAt(t *testing.T, store *Store, id, username, upstreamRefresh string, loginAt time.Time) {
	t.Helper()
	ctx := context.Background()
	client := &fosite.DefaultClient{ID: "pinniped-cli"}
	sess := NewSession()
	sess.Custom = CustomSessionData{Username: username, ProviderType: string(issuer.TypeOIDC), ProviderResource: "upstream-idp", LoginTime: time.Now(),
		Session: connectors.Session{OIDC: &connectors.OIDCSession{UpstreamIssuer: "https://dex.example.com", UpstreamSubject: username, UpstreamRefreshToken: upstreamRefresh}}}
	sess.Subject, sess.Claims.RequestedAt = "sub-"+username, loginAt
	sess.SetExpiresAt(fosite.RefreshToken, time.Now().Add(time.Hour))
	req := fosite.NewRequest()
	req.ID, req.Client, req.Session = id, client, sess
	req.GrantedScope = fosite.Arguments{"openid", "offline_access"}
	for _, err := range []error{
		store.CreateRefreshTokenSession(ctx, id+"-refresh", id+"-access", req),
		store.CreateAccessTokenSession(ctx, id+"-access", req),
		store.CreatePKCERequestSession(ctx, id+"-pkce", req),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// EndSessions ends the logins whose sessions match, and only those: every record of each is
// deleted, and its upstream refresh token revoked once its last record goes.
func TestEndSessions(t *testing.T) {
	ctx := context.Background()
	clientset := fake.NewClientset()
	r := &revoker{}
	storage := NewStorage(clientset.CoreV1().Secrets(namespace), oneConnector{r}, sessionstest.Keys())
	store := storage.ForClients(oneClient{&fosite.DefaultClient{ID: "pinniped-cli"}})
	storeLogin(t, store, "login-pinny", "pinny", "pinny-upstream-refresh")
	storeLogin(t, store, "login-pinny-2", "pinny", "pinny-upstream-refresh-2")
	storeLogin(t, store, "login-walrus", "walrus", "walrus-upstream-refresh")

	ended, err := storage.EndSessions(ctx, func(s *Session) bool { return s.Custom.Username == "pinny" })
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ended, func(a, b EndedSession) int { return strings.Compare(a.RequestID, b.RequestID) })
	if want := []EndedSession{{"login-pinny", "pinny"}, {"login-pinny-2", "pinny"}}; !slices.Equal(ended, want) {
		t.Errorf("ended %v, want %v", ended, want)
	}
	slices.Sort(r.revoked)
	if want := []string{"pinny-upstream-refresh", "pinny-upstream-refresh-2"}; !slices.Equal(r.revoked, want) {
		t.Errorf("revoked upstream %v, want %v", r.revoked, want)
	}
	list, err := clientset.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if id := s.Labels[RequestIDLabel]; id != "login-walrus" {
			t.Errorf("record %s of %s is left", s.Name, id)
		}
	}
	if len(list.Items) != 3 {
		t.Errorf("%d records left, want walrus's 3", len(list.Items))
	}

	// Again: nothing more matches.
	if ended, err := storage.EndSessions(ctx, func(s *Session) bool { return s.Custom.Username == "pinny" }); err != nil || len(ended) != 0 {
		t.Errorf("a second pass ended %v, %v; want none", ended, err)
	}
}

// Before the keys that open upstream tokens are loaded, EndSessions ends nothing and says why:
// it could not revoke the upstream tokens.
func TestEndSessionsWaitsForKeys(t *testing.T) {
	storage := NewStorage(fake.NewClientset().CoreV1().Secrets(namespace), noConnectors{}, tokenseal.NewRing())
	if _, err := storage.EndSessions(context.Background(), func(*Session) bool { return true }); !errors.Is(err, tokenseal.ErrNotReady) {
		t.Errorf("EndSessions before the keys = %v, want ErrNotReady", err)
	}
}

// EndLogin finds a login by its ID tokens' subject, client and login time, and ends it alone: not
// the same user's login of another time, nor one whose stored client or subject differ from the
// ID token's.
func TestEndLogin(t *testing.T) {
	ctx := context.Background()
	clientset := fake.NewClientset()
	r := &revoker{}
	storage := NewStorage(clientset.CoreV1().Secrets(namespace), oneConnector{r}, sessionstest.Keys())
	store := storage.ForClients(oneClient{&fosite.DefaultClient{ID: "pinniped-cli"}})
	at := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	storeLoginAt(t, store, "login-now", "pinny", "now-refresh", at)
	storeLoginAt(t, store, "login-earlier", "pinny", "earlier-refresh", at.Add(-time.Hour))

	for _, tc := range []struct{ name, client, subject string }{
		{"another client", "webapp", "sub-pinny"},
		{"another subject", "pinniped-cli", "sub-walrus"},
	} {
		if ended, err := storage.EndLogin(ctx, LoginKey("sub-pinny", "pinniped-cli", at.Unix()), tc.client, tc.subject); err != nil || len(ended) != 0 {
			t.Errorf("%s: ended %v, %v; want none", tc.name, ended, err)
		}
	}
	ended, err := storage.EndLogin(ctx, LoginKey("sub-pinny", "pinniped-cli", at.Unix()), "pinniped-cli", "sub-pinny")
	if err != nil || !slices.Equal(ended, []string{"login-now"}) {
		t.Fatalf("EndLogin = %v, %v; want login-now", ended, err)
	}
	if !slices.Equal(r.revoked, []string{"now-refresh"}) {
		t.Errorf("revoked upstream %v, want now-refresh", r.revoked)
	}
	list, err := clientset.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if s.Labels[RequestIDLabel] != "login-earlier" {
			t.Errorf("record %s of %s is left", s.Name, s.Labels[RequestIDLabel])
		}
	}
}
