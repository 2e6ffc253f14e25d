package oidclogin

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Token is what a login yields, as the session cache stores it: the tokens of one session at the
// issuer.
type Token struct {
	AccessToken  *AccessToken  `json:"access,omitempty"`
	RefreshToken *RefreshToken `json:"refresh,omitempty"`
	IDToken      *IDToken      `json:"id,omitempty"`
}

// AccessToken is an OAuth 2.0 access token.
type AccessToken struct {
	Token  string      `json:"token"`
	Type   string      `json:"type,omitempty"`
	Expiry metav1.Time `json:"expiryTimestamp,omitempty"`
}

// RefreshToken is an OAuth 2.0 refresh token.
type RefreshToken struct {
	Token string `json:"token"`
	// SessionExpiry is when the session reaches its maximum length, as the issuer said in its
	// token response's session_expires_in (a Supervisor's addition to the protocol; zero when the
	// issuer does not say): no refresh works after it. Pinniped's cache has no such field; its CLI
	// ignores it.
	SessionExpiry metav1.Time `json:"sessionExpiryTimestamp,omitzero"`
}

// IDToken is a verified OpenID Connect ID token with its claims.
type IDToken struct {
	Token  string         `json:"token"`
	Expiry metav1.Time    `json:"expiryTimestamp,omitempty"`
	Claims map[string]any `json:"claims,omitempty"`
}

// SessionKey identifies a session in the cache. Login fills it in with the scopes sorted.
type SessionKey struct {
	Issuer      string   `json:"issuer"`
	ClientID    string   `json:"clientID"`
	Scopes      []string `json:"scopes"`
	RedirectURI string   `json:"redirect_uri"`
	// UpstreamProviderName keeps the sessions with a Supervisor's identity providers apart.
	UpstreamProviderName string `json:"upstream_provider_name,omitempty"`
}

// Equal reports whether two keys name the same session.
func (k SessionKey) Equal(o SessionKey) bool {
	return k.Issuer == o.Issuer && k.ClientID == o.ClientID && slices.Equal(k.Scopes, o.Scopes) &&
		k.RedirectURI == o.RedirectURI && k.UpstreamProviderName == o.UpstreamProviderName
}

// SessionCache keeps tokens between logins. Implementations report their own failures: a cache
// that cannot be read or written only costs a new login.
type SessionCache interface {
	// GetToken returns the tokens stored under key, or nil.
	GetToken(SessionKey) *Token
	// PutToken stores the tokens under key, replacing earlier ones; nil removes them.
	PutToken(SessionKey, *Token)
}

// validFor reports whether the ID token is still valid d from now.
func (t *IDToken) validFor(now time.Time, d time.Duration) bool {
	return t != nil && t.Token != "" && t.Expiry.Time.After(now.Add(d))
}

// validFor reports whether the access token is still valid d from now.
func (t *AccessToken) validFor(now time.Time, d time.Duration) bool {
	return t != nil && t.Token != "" && t.Expiry.Time.After(now.Add(d))
}

// hasAudience reports whether the ID token was issued to exactly audience.
func (t *IDToken) hasAudience(audience string) bool {
	if t == nil {
		return false
	}
	switch aud := t.Claims["aud"].(type) {
	case string:
		return aud == audience
	case []any:
		return len(aud) == 1 && aud[0] == audience
	}
	return false
}

func metaTime(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t.UTC())
}
