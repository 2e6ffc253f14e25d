// Package authncache holds the live token authenticators built from JWTAuthenticator and
// WebhookAuthenticator objects, keyed by the object's API group, kind and name. Controllers fill it;
// the TokenCredentialRequest handler reads it on every request, so reads take no lock.
package authncache

import (
	"context"
	"errors"
	"sort"
	"sync"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// Key names an authenticator object as a TokenCredentialRequest refers to it.
type Key struct {
	APIGroup string
	Kind     string
	Name     string
}

// Value is a usable token authenticator. Close releases its background work (JWKS refresh).
type Value interface {
	authenticator.Token
	Close()
}

// Cache maps keys to authenticators. The zero value is ready to use.
type Cache struct {
	m sync.Map // Key -> Value
}

// Get returns the authenticator for key, or nil when there is none.
func (c *Cache) Get(key Key) Value {
	v, ok := c.m.Load(key)
	if !ok {
		return nil
	}
	return v.(Value)
}

// Store puts value under key, closing the authenticator it replaces.
func (c *Cache) Store(key Key, value Value) {
	if old, loaded := c.m.Swap(key, value); loaded && old.(Value) != value {
		old.(Value).Close()
	}
}

// Delete drops key and closes its authenticator.
func (c *Cache) Delete(key Key) {
	if old, loaded := c.m.LoadAndDelete(key); loaded {
		old.(Value).Close()
	}
}

// Keys lists the cached keys in a stable order.
func (c *Cache) Keys() []Key {
	var keys []Key
	c.m.Range(func(k, _ any) bool {
		keys = append(keys, k.(Key))
		return true
	})
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.APIGroup != b.APIGroup {
			return a.APIGroup < b.APIGroup
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	return keys
}

// ErrNoSuchAuthenticator is the error of a token for an authenticator the cache does not hold,
// with Pinniped's text: its audit events report it as an unexpected error, not a rejected token.
var ErrNoSuchAuthenticator = errors.New("no such authenticator")

// AuthenticateToken authenticates token with the authenticator under key, or fails with
// ErrNoSuchAuthenticator.
func (c *Cache) AuthenticateToken(ctx context.Context, key Key, token string) (*authenticator.Response, bool, error) {
	v := c.Get(key)
	if v == nil {
		return nil, false, ErrNoSuchAuthenticator
	}
	return v.AuthenticateToken(ctx, token)
}
