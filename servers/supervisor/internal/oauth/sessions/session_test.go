package sessions

import (
	"encoding/json"
	"testing"
)

// TestSessionStorageFormat pins the JSON of the Supervisor's part of a stored session: the
// connectors' data sits inline under oidc, ldap and github, as in sessions stored before there
// were connectors, which must keep working.
func TestSessionStorageFormat(t *testing.T) {
	const stored = `{"username":"pinny","groups":["seals"],"upstreamUsername":"pinny@example.com","upstreamGroups":["seals"],` +
		`"providerName":"Dex","providerResource":"dex","providerUID":"dex-uid","providerType":"oidc","loginTime":"2026-01-01T00:00:00Z",` +
		`"oidc":{"upstreamIssuer":"https://dex.example.com","upstreamSubject":"sub","upstreamRefreshToken":"refresh","upstreamAccessToken":""},` +
		`"ldap":{"userDN":"uid=pinny,dc=example","uid":"uid-pinny","extraRefreshAttributes":{"pwdLastSet":"1"}},` +
		`"github":{"upstreamAccessToken":"gho_token"},"additionalClaims":{"upstreamEmail":"pinny@example.com"}}`
	var c CustomSessionData
	if err := json.Unmarshal([]byte(stored), &c); err != nil {
		t.Fatal(err)
	}
	if c.OIDC == nil || c.OIDC.UpstreamRefreshToken != "refresh" || c.LDAP == nil || c.LDAP.ExtraRefreshAttributes["pwdLastSet"] != "1" ||
		c.GitHub == nil || c.GitHub.UpstreamAccessToken != "gho_token" {
		t.Errorf("decoded %+v, %+v, %+v", c.OIDC, c.LDAP, c.GitHub)
	}
	again, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != stored {
		t.Errorf("encoded\n%s\nwant\n%s", again, stored)
	}
}
