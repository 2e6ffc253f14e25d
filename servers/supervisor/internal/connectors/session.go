package connectors

import "maps"

// Session is the connectors' part of a stored login session: what refreshes and revocation need,
// one field per kind of upstream (LDAP serves Active Directory too). It is stored inline in the
// session's JSON, so its field names are part of the storage format of existing sessions.
type Session struct {
	OIDC   *OIDCSession   `json:"oidc,omitempty"`
	LDAP   *LDAPSession   `json:"ldap,omitempty"`
	GitHub *GitHubSession `json:"github,omitempty"`
}

// OIDCSession identifies the upstream user and holds exactly one upstream token: the refresh
// token, or, from an upstream that issues none, the access token that refreshes present to its
// userinfo endpoint.
type OIDCSession struct {
	UpstreamIssuer       string `json:"upstreamIssuer"`
	UpstreamSubject      string `json:"upstreamSubject"`
	UpstreamRefreshToken string `json:"upstreamRefreshToken"`
	UpstreamAccessToken  string `json:"upstreamAccessToken"`
}

// LDAPSession finds the user's entry again at refresh and checks it is the same person.
type LDAPSession struct {
	UserDN string `json:"userDN"`
	UID    string `json:"uid"`
	// ExtraRefreshAttributes are entry attributes from login that refreshes compare (Active
	// Directory's pwdLastSet).
	ExtraRefreshAttributes map[string]string `json:"extraRefreshAttributes,omitempty"`
}

// GitHubSession holds the GitHub access token that refreshes read the user with.
type GitHubSession struct {
	UpstreamAccessToken string `json:"upstreamAccessToken"`
}

// Clone deep-copies the session.
func (s Session) Clone() Session {
	if s.OIDC != nil {
		o := *s.OIDC
		s.OIDC = &o
	}
	if s.LDAP != nil {
		l := *s.LDAP
		l.ExtraRefreshAttributes = maps.Clone(l.ExtraRefreshAttributes)
		s.LDAP = &l
	}
	if s.GitHub != nil {
		g := *s.GitHub
		s.GitHub = &g
	}
	return s
}

// Tokens are the session's upstream credentials, which the session storage seals: an OIDC
// provider's refresh or access token, a GitHub access token.
func (s *Session) Tokens() []*string {
	var tokens []*string
	if s.OIDC != nil {
		tokens = append(tokens, &s.OIDC.UpstreamRefreshToken, &s.OIDC.UpstreamAccessToken)
	}
	if s.GitHub != nil {
		tokens = append(tokens, &s.GitHub.UpstreamAccessToken)
	}
	return tokens
}

// Revocable reports whether the session holds an upstream token to revoke when it ends: an OIDC
// refresh or access token. GitHub's access tokens are not revoked: GitHub has no RFC 7009 endpoint.
func (s Session) Revocable() bool {
	return s.OIDC != nil && (s.OIDC.UpstreamRefreshToken != "" || s.OIDC.UpstreamAccessToken != "")
}
