package sessions

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ory/fosite"

	"sealion.dev/servers/supervisor/internal/oauth/sessions/sessionstest"
)

// oneClient is a fosite.ClientManager that knows one client.
type oneClient struct{ fosite.Client }

func (c oneClient) GetClient(context.Context, string) (fosite.Client, error) { return c.Client, nil }
func (oneClient) ClientAssertionJWTValid(context.Context, string) error      { return nil }
func (oneClient) SetClientAssertionJWT(context.Context, string, time.Time) error {
	return nil
}

func newStore(t *testing.T) (*Store, *fosite.Request) {
	t.Helper()
	client := &fosite.DefaultClient{ID: "pinniped-cli"}
	store := NewStorage(sessionstest.OptimisticClientset().CoreV1().Secrets(namespace), noConnectors{}, sessionstest.Keys()).ForClients(oneClient{client})
	req := fosite.NewRequest()
	req.ID, req.Client, req.Session = "login-1", client, NewSession()
	return store, req
}

// Two token requests that both read a code while it was active cannot both redeem it: the read
// and the deactivation are one step.
func TestAuthorizationCodeDeactivatesOnce(t *testing.T) {
	ctx := context.Background()
	store, req := newStore(t)
	if err := store.CreateAuthorizeCodeSession(ctx, "code-sig", req); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := store.GetAuthorizeCodeSession(ctx, "code-sig", NewSession()); err != nil {
			t.Fatalf("reading the active code: %v", err)
		}
	}
	if err := store.InvalidateAuthorizeCodeSession(ctx, "code-sig"); err != nil {
		t.Fatalf("first redemption: %v", err)
	}
	if err := store.InvalidateAuthorizeCodeSession(ctx, "code-sig"); !errors.Is(err, ErrAlreadyUsed) {
		t.Fatalf("second redemption: %v, want ErrAlreadyUsed", err)
	}
	if _, err := store.GetAuthorizeCodeSession(ctx, "code-sig", NewSession()); !errors.Is(err, fosite.ErrInvalidatedAuthorizeCode) {
		t.Errorf("reading the used code: %v, want fosite.ErrInvalidatedAuthorizeCode", err)
	}
}

// Both writers read the Secret before either wrote: the second update carries a stale
// resourceVersion and loses.
func TestDeactivateConflictLoses(t *testing.T) {
	ctx := context.Background()
	store, req := newStore(t)
	if err := store.CreateAuthorizeCodeSession(ctx, "code-sig", req); err != nil {
		t.Fatal(err)
	}
	_, recA, secretA, errA := store.get(ctx, typeAuthcode, "code-sig", nil, false)
	_, recB, secretB, errB := store.get(ctx, typeAuthcode, "code-sig", nil, false)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if err := store.deactivate(ctx, secretA, recA, false); err != nil {
		t.Fatalf("first: %v", err)
	}
	if err := store.deactivate(ctx, secretB, recB, false); !errors.Is(err, ErrAlreadyUsed) {
		t.Fatalf("second, from the same read: %v, want ErrAlreadyUsed", err)
	}
}

// A rotated refresh token is kept inactive, without its session, and found again as reused; the
// one retired before it is deleted.
func TestRefreshTokenRotation(t *testing.T) {
	ctx := context.Background()
	store, req := newStore(t)
	req.Session.(*Session).Custom.ProviderName = "upstream"
	for _, sig := range []string{"refresh-1", "refresh-2"} {
		if err := store.CreateRefreshTokenSession(ctx, sig, "", req); err != nil {
			t.Fatal(err)
		}
		if err := store.RotateRefreshToken(ctx, req.ID, sig); err != nil {
			t.Fatalf("rotating %s: %v", sig, err)
		}
	}
	if err := store.RotateRefreshToken(ctx, req.ID, "refresh-2"); !errors.Is(err, fosite.ErrSerializationFailure) {
		t.Errorf("rotating refresh-2 again: %v, want fosite.ErrSerializationFailure", err)
	}
	got, err := store.GetRefreshTokenSession(ctx, "refresh-2", NewSession())
	if !errors.Is(err, fosite.ErrInactiveToken) || got == nil || got.GetID() != req.ID {
		t.Fatalf("reading the rotated refresh-2: %v, %v; want the request with fosite.ErrInactiveToken", got, err)
	}
	if name := got.GetSession().(*Session).Custom.ProviderName; name != "" {
		t.Errorf("the retired refresh token still holds its session (provider %q)", name)
	}
	if _, err := store.GetRefreshTokenSession(ctx, "refresh-1", NewSession()); !errors.Is(err, fosite.ErrNotFound) {
		t.Errorf("reading refresh-1, retired two rotations ago: %v, want fosite.ErrNotFound", err)
	}
}
