package sessions

import (
	"slices"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/openid"

	"sealion.dev/servers/supervisor/internal/connectors"
)

// Session is what the Supervisor remembers about a login: fosite's OpenID Connect session (the
// ID token claims and token expiries) plus the identity and how to re-check it upstream.
type Session struct {
	*openid.DefaultSession
	Custom CustomSessionData `json:"custom"`
}

// CustomSessionData is the Supervisor's part of a session.
type CustomSessionData struct {
	// Username and Groups are the downstream identity, after identity transformations.
	Username string   `json:"username"`
	Groups   []string `json:"groups"`
	// UpstreamUsername and UpstreamGroups are the identity as the upstream reported it.
	UpstreamUsername string   `json:"upstreamUsername"`
	UpstreamGroups   []string `json:"upstreamGroups"`
	// ProviderName is the identity provider's display name in the FederationDomain,
	// ProviderResource and ProviderUID its object.
	ProviderName     string `json:"providerName"`
	ProviderResource string `json:"providerResource"`
	ProviderUID      string `json:"providerUID"`
	ProviderType     string `json:"providerType"`
	// LoginTime is when the user logged in upstream; the session ends SessionLifetime later.
	LoginTime time.Time `json:"loginTime"`
	// Session is what refreshes and revocation need (its fields oidc, ldap and github are
	// inline in the stored JSON).
	connectors.Session
	// AdditionalClaims are the upstream claims copied at login (OIDCIdentityProvider
	// claims.additionalClaimMappings), kept for the tokens of later exchanges.
	AdditionalClaims map[string]any `json:"additionalClaims,omitempty"`
}

// AdditionalClaimsClaim is the claim of our ID tokens holding the additional claims.
const AdditionalClaimsClaim = "additionalClaims"

var _ openid.Session = (*Session)(nil)

// NewSession returns an empty session for fosite to fill from storage.
func NewSession() *Session {
	return &Session{DefaultSession: openid.NewDefaultSession()}
}

// Clone deep-copies the session (fosite clones sessions before changing them).
func (s *Session) Clone() fosite.Session {
	if s == nil {
		return nil
	}
	c := *s
	c.DefaultSession = s.DefaultSession.Clone().(*openid.DefaultSession)
	c.Custom.Groups = slices.Clone(s.Custom.Groups)
	c.Custom.UpstreamGroups = slices.Clone(s.Custom.UpstreamGroups)
	c.Custom.Session = s.Custom.Session.Clone()
	return &c
}
