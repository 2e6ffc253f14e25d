package sessions

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/openid"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
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
	// ProviderResource and ProviderUID its object. Pinniped's providerName is the object's name,
	// so the display name is stored under a name of its own.
	ProviderName     string `json:"providerDisplayName"`
	ProviderResource string `json:"providerName"`
	ProviderUID      string `json:"providerUID"`
	ProviderType     string `json:"providerType"`
	// LoginTime is when the user logged in upstream, and LastRefreshTime when the session was
	// last refreshed (zero until then): its session policy (sessionpolicy) counts from them.
	LoginTime       time.Time `json:"loginTime"`
	LastRefreshTime time.Time `json:"lastRefreshTime,omitzero"`
	// FederationDomain is the name of the FederationDomain of the login, so that a
	// SessionRevocation naming it finds its sessions; ours alone (sessions written before it, and
	// Pinniped's, have none).
	FederationDomain string `json:"federationDomain,omitempty"`
	// Session is what refreshes and revocation need (its fields oidc, ldap and github are
	// inline in the stored JSON; an Active Directory login's ldap is stored as activedirectory,
	// as Pinniped's).
	connectors.Session
	// AdditionalClaims are the upstream claims copied at login (OIDCIdentityProvider
	// claims.additionalClaimMappings), kept for the tokens of later exchanges.
	AdditionalClaims map[string]any `json:"additionalClaims,omitempty"`
}

// AdditionalClaimsClaim is the claim of our ID tokens holding the additional claims.
const AdditionalClaimsClaim = "additionalClaims"

var _ openid.Session = (*Session)(nil)

// storedSession is the JSON of a Session, as Pinniped's: fosite's part under "fosite", the
// Supervisor's under "custom".
type storedSession struct {
	Fosite *openid.DefaultSession `json:"fosite,omitempty"`
	Custom *CustomSessionData     `json:"custom,omitempty"`
}

func (s *Session) MarshalJSON() ([]byte, error) {
	return json.Marshal(storedSession{Fosite: s.DefaultSession, Custom: &s.Custom})
}

func (s *Session) UnmarshalJSON(data []byte) error {
	var stored storedSession
	if err := json.Unmarshal(data, &stored); err != nil {
		return err
	}
	s.DefaultSession, s.Custom = stored.Fosite, CustomSessionData{}
	if s.DefaultSession == nil {
		s.DefaultSession = openid.NewDefaultSession()
	}
	if stored.Custom != nil {
		s.Custom = *stored.Custom
	}
	return nil
}

// customJSON is CustomSessionData's JSON: its own fields (plainCustom, without these methods)
// and Active Directory's session, which Pinniped keeps apart from LDAP's.
type customJSON struct {
	plainCustom
	ActiveDirectory *connectors.LDAPSession `json:"activedirectory,omitempty"`
}

type plainCustom CustomSessionData

func (c CustomSessionData) MarshalJSON() ([]byte, error) {
	v := customJSON{plainCustom: plainCustom(c)}
	if c.ProviderType == string(issuer.TypeActiveDirectory) {
		v.ActiveDirectory, v.LDAP = c.LDAP, nil
	}
	return json.Marshal(v)
}

func (c *CustomSessionData) UnmarshalJSON(data []byte) error {
	var v customJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*c = CustomSessionData(v.plainCustom)
	if c.LDAP == nil {
		c.LDAP = v.ActiveDirectory
	}
	return nil
}

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
