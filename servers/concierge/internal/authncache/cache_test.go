package authncache

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

type fakeAuth struct {
	name   string
	closed int
}

func (f *fakeAuth) AuthenticateToken(_ context.Context, token string) (*authenticator.Response, bool, error) {
	if token != "good" {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: f.name}}, true, nil
}
func (f *fakeAuth) Close() { f.closed++ }

func TestCache(t *testing.T) {
	var c Cache
	key := Key{APIGroup: "authentication.concierge.pinniped.dev", Kind: "JWTAuthenticator", Name: "a"}
	ctx := context.Background()

	if _, ok, err := c.AuthenticateToken(ctx, key, "good"); ok || !errors.Is(err, ErrNoSuchAuthenticator) {
		t.Fatalf("empty cache: ok=%v err=%v, want ErrNoSuchAuthenticator", ok, err)
	}

	first := &fakeAuth{name: "first"}
	c.Store(key, first)
	resp, ok, err := c.AuthenticateToken(ctx, key, "good")
	if !ok || err != nil || resp.User.GetName() != "first" {
		t.Fatalf("got %v %v %v", resp, ok, err)
	}

	second := &fakeAuth{name: "second"}
	c.Store(key, second)
	if first.closed != 1 {
		t.Errorf("replaced authenticator closed %d times, want 1", first.closed)
	}
	c.Store(key, second) // storing the same value again must not close it
	if second.closed != 0 {
		t.Errorf("re-stored authenticator was closed")
	}

	other := Key{APIGroup: key.APIGroup, Kind: "WebhookAuthenticator", Name: "a"}
	c.Store(other, &fakeAuth{name: "hook"})
	if got := c.Keys(); len(got) != 2 || got[0] != key || got[1] != other {
		t.Errorf("Keys() = %v", got)
	}

	c.Delete(key)
	if second.closed != 1 || c.Get(key) != nil {
		t.Errorf("Delete did not close and remove: closed=%d", second.closed)
	}
	c.Delete(key) // deleting a missing key is a no-op
}
