package sessions

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/sessions/sessionstest"
)

const namespace = "supervisor"

// noConnectors has no identity provider ready.
type noConnectors struct{}

func (noConnectors) Get(issuer.IdentityProviderType, string, string) (connectors.Connector, bool) {
	return nil, false
}

// oneConnector is the connector of the OIDCIdentityProvider namespace/upstream-idp.
type oneConnector struct{ conn connectors.Connector }

func (c oneConnector) Get(typ issuer.IdentityProviderType, ns, name string) (connectors.Connector, bool) {
	return c.conn, typ == issuer.TypeOIDC && ns == namespace && name == "upstream-idp"
}

// revoker records the refresh tokens it revokes, or fails. EndSessions calls it from several
// goroutines.
type revoker struct {
	mu      sync.Mutex
	revoked []string
	err     error
}

func (r *revoker) Revoke(_ context.Context, s connectors.Session) (string, error) {
	if r.err != nil {
		return "", r.err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.revoked = append(r.revoked, s.OIDC.UpstreamRefreshToken)
	return "refresh_token", nil
}

func TestRevokeUpstream(t *testing.T) {
	oidcSession := func(resource string) *Session {
		s := NewSession()
		s.Custom = CustomSessionData{ProviderType: string(issuer.TypeOIDC), ProviderResource: resource,
			Session: connectors.Session{OIDC: &connectors.OIDCSession{UpstreamIssuer: "https://upstream.example.com", UpstreamSubject: "upstream-subject", UpstreamRefreshToken: "upstream-refresh"}}}
		return s
	}
	tests := []struct {
		name        string
		namespace   string
		session     *Session
		conn        connectors.Connector
		wantErr     bool
		wantRevoked bool
	}{
		{name: "revoked", namespace: namespace, session: oidcSession("upstream-idp"), wantRevoked: true},
		{name: "identity provider gone", namespace: namespace, session: oidcSession("gone"), wantErr: true},
		{name: "other namespace", namespace: "elsewhere", session: oidcSession("upstream-idp"), wantErr: true},
		{name: "the upstream fails", namespace: namespace, session: oidcSession("upstream-idp"), conn: &revoker{err: errors.New("unreachable")}, wantErr: true},
		{name: "a connector that does not revoke", namespace: namespace, session: oidcSession("upstream-idp"), conn: struct{}{}},
		{name: "an LDAP login, which holds no upstream token", namespace: namespace, session: func() *Session {
			s := NewSession()
			s.Custom = CustomSessionData{ProviderType: string(issuer.TypeLDAP), ProviderResource: "corp-ldap",
				Session: connectors.Session{LDAP: &connectors.LDAPSession{UserDN: "uid=pinny", UID: "uid-pinny"}}}
			return s
		}()},
		{name: "no upstream token", namespace: namespace, session: func() *Session {
			s := oidcSession("upstream-idp")
			s.Custom.OIDC.UpstreamRefreshToken = ""
			return s
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &revoker{}
			conn := tt.conn
			if conn == nil {
				conn = r
			}
			var log bytes.Buffer
			s := NewStorage(fake.NewClientset().CoreV1().Secrets(namespace), oneConnector{conn}, sessionstest.Keys()).WithAudit(audit.New(&log, false))
			err := s.revokeUpstream(context.Background(), tt.namespace, "login-1", tt.session)
			if (err != nil) != tt.wantErr {
				t.Errorf("revokeUpstream() = %v, want error %v", err, tt.wantErr)
			}
			if got := len(r.revoked) == 1 && r.revoked[0] == "upstream-refresh"; got != tt.wantRevoked || !tt.wantRevoked && len(r.revoked) != 0 {
				t.Errorf("revoked %v, want revoked %v", r.revoked, tt.wantRevoked)
			}
			// Only a revocation is audited, with the login's session ID and the type of the token,
			// never the token, as Pinniped.
			event := `"message":"Upstream OIDC Token Revoked","auditEvent":true,"sessionID":"login-1","type":"refresh_token"}`
			if got := log.String(); strings.Contains(got, event) != tt.wantRevoked || strings.Count(got, "\n") > 1 || strings.Contains(got, "upstream-refresh") {
				t.Errorf("audit events %q", got)
			}
		})
	}
}
