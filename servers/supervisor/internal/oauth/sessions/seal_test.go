package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ory/fosite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/oauth/sessions/sessionstest"
	"sealion.dev/servers/supervisor/internal/tokenseal"
)

const (
	refreshToken = "upstream-refresh-token-value"
	githubToken  = "gho_upstream-access-token-value"
)

// storeWithTokens returns a store on clientset and a request whose session holds an OIDC
// refresh token and a GitHub access token.
func storeWithTokens(clientset *fake.Clientset, keys *tokenseal.Ring) (*Store, *fosite.Request) {
	client := &fosite.DefaultClient{ID: "pinniped-cli"}
	store := NewStorage(clientset.CoreV1().Secrets(namespace), noConnectors{}, keys).ForClients(oneClient{client})
	sess := NewSession()
	sess.Custom.Session = connectors.Session{
		OIDC:   &connectors.OIDCSession{UpstreamIssuer: "https://dex.example.com", UpstreamSubject: "sub", UpstreamRefreshToken: refreshToken},
		GitHub: &connectors.GitHubSession{UpstreamAccessToken: githubToken},
	}
	req := fosite.NewRequest()
	req.ID, req.Client, req.Session = "login-1", client, sess
	return store, req
}

// Upstream tokens are stored sealed: the Secret holds neither, and reading it gives both back.
func TestUpstreamTokensStoredSealed(t *testing.T) {
	ctx := context.Background()
	clientset := fake.NewClientset()
	store, req := storeWithTokens(clientset, sessionstest.Keys())
	if err := store.CreateRefreshTokenSession(ctx, "refresh-sig", "", req); err != nil {
		t.Fatal(err)
	}
	secret, err := clientset.CoreV1().Secrets(namespace).Get(ctx, SecretName(typeRefreshToken, "refresh-sig"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := string(secret.Data[DataKey])
	if strings.Contains(stored, refreshToken) || strings.Contains(stored, githubToken) {
		t.Fatalf("the stored record holds an upstream token in clear: %s", stored)
	}
	if strings.Count(stored, "sealed:v1:") != 2 || !strings.Contains(stored, `"upstreamSubject":"sub"`) {
		t.Errorf("the stored record seals more or less than the two tokens: %s", stored)
	}
	got, err := store.GetRefreshTokenSession(ctx, "refresh-sig", NewSession())
	if err != nil {
		t.Fatal(err)
	}
	c := got.GetSession().(*Session).Custom
	if c.OIDC.UpstreamRefreshToken != refreshToken || c.GitHub.UpstreamAccessToken != githubToken {
		t.Errorf("read back %+v, %+v", c.OIDC, c.GitHub)
	}
	if original := req.Session.(*Session).Custom; original.OIDC.UpstreamRefreshToken != refreshToken {
		t.Error("storing sealed the caller's session in place")
	}
}

// A record whose tokens no key opens (its key was retired, or its sealed token was copied from
// another login) is not found: the login cannot go on upstream. With no keys loaded yet, reading
// fails for now and the record stays.
func TestUnopenableRecords(t *testing.T) {
	ctx := context.Background()
	clientset := fake.NewClientset()
	store, req := storeWithTokens(clientset, sessionstest.Keys())
	if err := store.CreateRefreshTokenSession(ctx, "refresh-sig", "", req); err != nil {
		t.Fatal(err)
	}
	other, _ := storeWithTokens(clientset, sessionstest.Keys())
	if _, err := other.GetRefreshTokenSession(ctx, "refresh-sig", NewSession()); !errors.Is(err, fosite.ErrNotFound) {
		t.Errorf("with another key: %v, want fosite.ErrNotFound", err)
	}

	moved, _ := clientset.CoreV1().Secrets(namespace).Get(ctx, SecretName(typeRefreshToken, "refresh-sig"), metav1.GetOptions{})
	moved = moved.DeepCopy()
	moved.Name = SecretName(typeRefreshToken, "moved-sig")
	moved.ResourceVersion = ""
	moved.Data[DataKey] = []byte(strings.Replace(string(moved.Data[DataKey]), `"id":"login-1"`, `"id":"login-2"`, 1))
	if _, err := clientset.CoreV1().Secrets(namespace).Create(ctx, moved, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.GetRefreshTokenSession(ctx, "moved-sig", NewSession()); !errors.Is(err, fosite.ErrNotFound) {
		t.Errorf("tokens moved into another login: %v, want fosite.ErrNotFound", err)
	}

	notReady, _ := storeWithTokens(clientset, tokenseal.NewRing())
	_, err := notReady.GetRefreshTokenSession(ctx, "refresh-sig", NewSession())
	if !errors.Is(err, tokenseal.ErrNotReady) || errors.Is(err, fosite.ErrNotFound) {
		t.Errorf("before the keys are loaded: %v, want a passing failure", err)
	}
	if err := notReady.CreateRefreshTokenSession(ctx, "new-sig", "", req); !errors.Is(err, tokenseal.ErrNotReady) {
		t.Errorf("storing before the keys are loaded: %v", err)
	}
}

// Sessions stored before tokens were sealed keep working.
func TestPlainTokensStillRead(t *testing.T) {
	ctx := context.Background()
	clientset := fake.NewClientset()
	store, req := storeWithTokens(clientset, sessionstest.Keys())
	if err := store.CreateRefreshTokenSession(ctx, "refresh-sig", "", req); err != nil {
		t.Fatal(err)
	}
	secret, _ := clientset.CoreV1().Secrets(namespace).Get(ctx, SecretName(typeRefreshToken, "refresh-sig"), metav1.GetOptions{})
	rec := string(secret.Data[DataKey])
	// Put the clear tokens back in place of the sealed ones, as an older Supervisor stored them.
	for _, field := range []struct{ name, value string }{{"upstreamRefreshToken", refreshToken}, {"upstreamAccessToken", githubToken}} {
		start := strings.Index(rec, `"`+field.name+`":"`) + len(field.name) + 4
		end := start + strings.Index(rec[start:], `"`)
		rec = rec[:start] + field.value + rec[end:]
	}
	secret.Data[DataKey] = []byte(rec)
	if _, err := clientset.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := store.GetRefreshTokenSession(ctx, "refresh-sig", NewSession())
	if err != nil {
		t.Fatal(err)
	}
	if c := got.GetSession().(*Session).Custom; c.OIDC.UpstreamRefreshToken != refreshToken || c.GitHub.UpstreamAccessToken != githubToken {
		t.Errorf("read back %+v, %+v", c.OIDC, c.GitHub)
	}
}
