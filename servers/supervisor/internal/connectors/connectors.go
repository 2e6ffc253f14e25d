// Package connectors is how the Supervisor talks to upstream identity providers, one package per
// kind of identity provider object below it. A kind's factory turns an object (with the Secrets
// and CA bundle it refers to) into status conditions and, when they are all true, a Connector;
// the upstreamidp controller keeps the connectors in a Registry, and the login endpoints find them
// there. A connector whose upstream cannot be reached fails with an Unavailable Error, which the
// endpoints report to the Registry so that the controller probes the upstream at once; its object
// keeps its last good connector meanwhile (see Factory).
//
// A Connector offers one or more capabilities, small interfaces the endpoints check for with type
// assertions: logging in with a password, in a browser at the upstream, refreshing a session,
// revoking its upstream tokens. A new kind implements what it can and registers in package kinds.
package connectors

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// Connector is a usable upstream of one identity provider object. It implements one or more of
// PasswordConnector, BrowserConnector, RefreshConnector and RevokeConnector.
type Connector any

// Login says which identity provider of a FederationDomain a login goes through.
type Login struct {
	// IDPName is the identity provider's display name in the FederationDomain, part of the
	// downstream subject, so that the same upstream user differs between identity providers.
	IDPName string
	// CallbackURL is the FederationDomain's callback endpoint, the redirect URI of browser logins.
	CallbackURL string
}

// Identity is a user as the upstream authenticated them.
type Identity struct {
	// Subject is the downstream sub claim.
	Subject  string
	Username string
	Groups   []string
	// AdditionalClaims go into our ID tokens under the additionalClaims claim.
	AdditionalClaims map[string]any
	// Session is what refreshes and revocation need, stored with the session.
	Session Session
}

// PasswordConnector checks a username and password: at an LDAP server, or with an OIDC
// provider's password grant.
type PasswordConnector interface {
	Authenticate(ctx context.Context, login Login, username, password string) (*Identity, error)
}

// BrowserConnector logs users in at the upstream in their browser: it sends the browser there,
// and redeems the code the upstream sends it back with at login.CallbackURL.
type BrowserConnector interface {
	AuthorizeURL(ctx context.Context, login Login, state string, secrets BrowserSecrets) (string, error)
	Exchange(ctx context.Context, login Login, code string, secrets BrowserSecrets) (*Identity, error)
}

// BrowserSecrets secure the upstream leg of one browser login; they travel in the sealed state.
// A connector whose upstream has no use for one ignores it.
type BrowserSecrets struct {
	Nonce, PKCEVerifier string
}

// RefreshConnector checks at refresh that the user of a session may still log in and is the same
// person. It returns the identity as the upstream sees it now: the current groups, and session
// data that may have changed (a rotated refresh token); the caller compares the username.
type RefreshConnector interface {
	Refresh(ctx context.Context, login Login, prev Identity) (*Identity, error)
}

// RevokeConnector revokes the upstream tokens a session holds when the session ends. It returns
// the type (OAuth token_type_hint) of the token it revoked, or "" when it revoked none, for the
// audit event.
type RevokeConnector interface {
	Revoke(ctx context.Context, session Session) (revoked string, err error)
}

// Error is a login or refresh the upstream refused or could not serve, with the hint the client
// is shown. Connectors return other errors for failures whose details must not reach users; the
// endpoints log those and answer with a generic error.
type Error struct {
	// Unavailable means the upstream could not be reached, rather than refused the user; the
	// endpoints word the hint, naming the identity provider.
	Unavailable bool
	// Hint is shown to the client; empty shows the OAuth error's own description only.
	Hint string
	// Err is the cause, kept for logs; nil when the hint says it all.
	Err error
}

// Refused is an Error for a user the upstream refused.
func Refused(hint string, err error) *Error { return &Error{Hint: hint, Err: err} }

// Unavailable is an Error for an upstream that could not be reached: err is the cause.
func Unavailable(err error) *Error {
	return &Error{Unavailable: true, Hint: "the upstream identity provider is unreachable", Err: err}
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Hint
	}
	return fmt.Sprintf("%s: %v", e.Hint, e.Err)
}

// Unreachable reports whether err is a failure to reach a server over the network: a refused or
// reset connection, an unknown host, a timeout. A server's answer is not, nor a TLS certificate
// it was refused for. A joined error (one per address or protocol tried) is unreachable when each
// of its parts is.
func Unreachable(err error) bool {
	for err != nil {
		switch e := err.(type) {
		case interface{ Unwrap() []error }:
			parts := e.Unwrap()
			for _, part := range parts {
				if !Unreachable(part) {
					return false
				}
			}
			return len(parts) > 0
		case *net.OpError:
			// A TLS alert from the server comes as a "remote error": it was reached.
			return e.Op != "remote error"
		case *net.DNSError:
			return true
		case interface{ Timeout() bool }:
			if e.Timeout() {
				return true
			}
		}
		// One level at a time: errors.Is would also look inside the parts of a joined error.
		if err == context.DeadlineExceeded {
			return true
		}
		err = errors.Unwrap(err)
	}
	return false
}

func (e *Error) Unwrap() error { return e.Err }
