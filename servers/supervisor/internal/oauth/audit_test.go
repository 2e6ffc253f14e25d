package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/core/testing/syncbuffer"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/idtransform"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// sha256Hex is how Pinniped names a token in its audit events.
func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// auditLog collects audit events written by the test server's goroutines.
type auditLog struct{ syncbuffer.Buffer }

// events are the events written so far, decoded, each checked to be marked as an audit event.
func (a *auditLog) events(t *testing.T) []map[string]any {
	t.Helper()
	var events []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(a.String()), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev["auditEvent"] != true {
			t.Fatalf("not an audit event: %s", line)
		}
		events = append(events, ev)
	}
	return events
}

// find returns the events named message.
func find(events []map[string]any, message string) []map[string]any {
	var found []map[string]any
	for _, ev := range events {
		if ev["message"] == message {
			found = append(found, ev)
		}
	}
	return found
}

// A login, its code's redemption, a token exchange and a refresh write Pinniped's events: the
// identity provider used, the upstream identity, the session started, found and refreshed under
// one session ID, and each issued ID token by its SHA-256. No token or personal information is
// in them by default.
func TestLoginEventsAudited(t *testing.T) {
	h := newHarness(t, nil)
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	idToken := tok.Extra("id_token").(string)
	_, body := h.exchange(tok.AccessToken, "cluster-1")
	refreshed, err := h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatal(err)
	}

	events := h.auditLog.events(t)
	for message, n := range map[string]int{
		"Using Upstream IDP": 2, "Upstream Authorize Redirect": 1, "AuthorizeID From Parameters": 1, "Identity From Upstream IDP": 1,
		"Session Started": 1, "Session Found": 3, "ID Token Issued": 3, "Identity Refreshed From Upstream IDP": 1, "Session Refreshed": 1,
	} {
		if got := len(find(events, message)); got != n {
			t.Errorf("%d %q events, want %d", got, message, n)
		}
	}
	started := find(events, "Session Started")
	if len(started) != 1 {
		t.Fatal(h.auditLog.String())
	}
	sessionID, _ := started[0]["sessionID"].(string)
	if sessionID == "" || find(events, "Session Refreshed")[0]["sessionID"] != sessionID {
		t.Errorf("the refresh is not under the login's session ID %q", sessionID)
	}
	for _, ev := range find(events, "Session Found") {
		if ev["sessionID"] != sessionID {
			t.Errorf("Session Found %v, want session ID %s", ev, sessionID)
		}
	}
	if started[0]["personalInfo"].(map[string]any)["username"] != "redacted" {
		t.Errorf("Session Started shows personal information: %v", started[0])
	}
	if redirect, back := find(events, "Upstream Authorize Redirect")[0], find(events, "AuthorizeID From Parameters")[0]; redirect["authorizeID"] == nil || redirect["authorizeID"] != back["authorizeID"] {
		t.Errorf("the authorize IDs differ: %v, %v", redirect, back)
	}
	issued := map[any]bool{}
	for _, ev := range find(events, "ID Token Issued") {
		issued[ev["tokenID"]] = true
	}
	for _, raw := range []string{idToken, body["access_token"].(string), refreshed.Extra("id_token").(string)} {
		if !issued[h.endpoints.shared.Audit.TokenID(raw)] {
			t.Errorf("no ID Token Issued event with the fingerprint of an issued token")
		}
		if issued[sha256Hex(raw)] {
			t.Errorf("an ID Token Issued event names a token by its plain SHA-256, which lets log readers test guesses")
		}
	}
	using := find(events, "Using Upstream IDP")[0]
	if using["displayName"] != idpName || using["resourceName"] != "upstream-idp" || using["resourceUID"] != "idp-uid" || using["type"] != string(issuer.TypeOIDC) {
		t.Errorf("Using Upstream IDP: %v", using)
	}
	out := h.auditLog.String()
	for _, secret := range []string{tok.AccessToken, tok.RefreshToken, idToken, l.code, refreshed.RefreshToken, "pinny@example.com", "walruses"} {
		if strings.Contains(out, secret) {
			t.Errorf("the audit events show %q", secret)
		}
	}
}

// With personal information enabled, the identities are written.
func TestLoginEventsWithPersonalInfo(t *testing.T) {
	h := newHarness(t, nil)
	h.endpoints.WithAudit(audit.New(h.auditLog, true))
	h.login()
	events := h.auditLog.events(t)
	upstream := find(events, "Identity From Upstream IDP")[0]
	if p := upstream["personalInfo"].(map[string]any); p["upstreamUsername"] != "pinny@example.com" || upstream["upstreamIDPDisplayName"] != idpName {
		t.Errorf("Identity From Upstream IDP: %v", upstream)
	}
	if p := find(events, "Session Started")[0]["personalInfo"].(map[string]any); p["username"] != "pinny@example.com" || len(p["groups"].([]any)) != 2 {
		t.Errorf("Session Started: %v", p)
	}
}

// A wrong password and an identity the policies reject are audited, without the password.
func TestRefusedLoginsAudited(t *testing.T) {
	h, _ := newLDAPHarness(t, issuer.TypeLDAP)
	h.passwordAuthorize(newLogin(), ldapIDPName, "pinny", "wrong-password-xyz")
	if got := find(h.auditLog.events(t), "Incorrect Username Or Password"); len(got) != 1 {
		t.Errorf("%d Incorrect Username Or Password events:\n%s", len(got), h.auditLog.String())
	}
	if strings.Contains(h.auditLog.String(), "wrong-password-xyz") {
		t.Error("the audit events show the password")
	}

	pipeline, err := idtransform.Compile(configv1alpha1.FederationDomainTransforms{Expressions: []configv1alpha1.FederationDomainTransformsExpression{
		{Type: "policy/v1", Expression: `!("walruses" in groups)`, Message: "no walruses"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	h = newHarness(t, pipeline)
	h.authorize(h.cli().AuthCodeURL("some-state-value", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	rejected := find(h.auditLog.events(t), "Authentication Rejected By Transforms")
	if len(rejected) != 1 || rejected[0]["reason"] != "no walruses" {
		t.Errorf("rejections %v", rejected)
	}
	if len(find(h.auditLog.events(t), "Session Started")) != 0 {
		t.Error("a rejected login started a session")
	}
}

// wantParams fails unless the event's params are exactly want.
func wantParams(t *testing.T, ev map[string]any, want map[string]any) {
	t.Helper()
	if got := ev["params"]; !reflect.DeepEqual(got, want) {
		t.Errorf("params %v, want %v", got, want)
	}
}

// The authorize, callback and token requests of a login write their parameters, with only the
// values on Pinniped's allow-list of each endpoint in clear: codes, verifiers, nonces and states
// are redacted, and a repeated parameter is listed with all its values.
func TestRequestParametersAudited(t *testing.T) {
	h := newHarness(t, nil)
	l := newLogin()
	authURL := h.cli().AuthCodeURL(l.state, oidc.Nonce(l.nonce), oauth2.S256ChallengeOption(l.verifier), oauth2.SetAuthURLParam("pinniped_idp_name", idpName))
	loc, resp := h.authorize(authURL + "&login_hint=a&login_hint=b&state=second-state-value")
	if loc == nil {
		t.Fatalf("login did not reach the CLI: %s", resp.Status)
	}
	code := loc.Query().Get("code")
	tok, err := h.cli().Exchange(h.clientContext(), code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	events := h.auditLog.events(t)

	// The requests in order: authorize, callback (the upstream's own are not audited), token.
	params := find(events, "HTTP Request Parameters")
	if len(params) != 3 {
		t.Fatalf("%d parameter events, want 3:\n%s", len(params), h.auditLog.String())
	}
	authorize, callback, token := params[0], params[1], params[2]
	wantParams(t, authorize, map[string]any{
		"client_id": provider.PinnipedCLIClientID, "redirect_uri": cliCallback, "response_type": "code",
		"scope": strings.Join(h.cli().Scopes, " "), "code_challenge_method": "S256", "pinniped_idp_name": idpName,
		"login_hint": "a", "state": "redacted", "nonce": "redacted", "code_challenge": "redacted",
	})
	if got, want := authorize["multiValueParams"], map[string]any{"login_hint": []any{"a", "b"}, "state": []any{"redacted", "redacted"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("multiValueParams %v, want %v", got, want)
	}

	wantParams(t, callback, map[string]any{"code": "redacted", "state": "redacted"})

	wantParams(t, token, map[string]any{
		"grant_type": "authorization_code", "client_id": provider.PinnipedCLIClientID, "redirect_uri": cliCallback,
		"code": "redacted", "code_verifier": "redacted",
	})
	for _, ev := range []map[string]any{callback, token} {
		if _, ok := ev["multiValueParams"]; ok {
			t.Errorf("multiValueParams without a repeated parameter: %v", ev)
		}
	}
	headers := find(events, "HTTP Request Custom Headers Used")
	if len(headers) != 1 || headers[0]["Pinniped-Username"] != false || headers[0]["Pinniped-Password"] != false {
		t.Errorf("HTTP Request Custom Headers Used: %v", headers)
	}
	if basic := find(events, "HTTP Request Basic Auth"); len(basic) != 0 {
		t.Errorf("HTTP Request Basic Auth without basic auth: %v", basic)
	}
	out := h.auditLog.String()
	for _, secret := range []string{code, l.verifier, l.nonce, l.state, "second-state-value", tok.AccessToken, tok.RefreshToken, tok.Extra("id_token").(string)} {
		if strings.Contains(out, secret) {
			t.Errorf("the audit events show %q", secret)
		}
	}
}

// A client authenticating with HTTP basic auth is named in "HTTP Request Basic Auth"; its secret
// and the token it sends are in no event.
func TestBasicAuthAudited(t *testing.T) {
	h := newHarness(t, nil)
	const clientID, secret, refreshToken = "client.oauth.pinniped.dev-audited", "audited-client-secret", "pin_rt_audited-refresh-token"
	h.postToken(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}, "scope": {"openid"}}, clientID, secret)
	events := h.auditLog.events(t)
	basic := find(events, "HTTP Request Basic Auth")
	if len(basic) != 1 || basic[0]["clientID"] != clientID {
		t.Fatalf("HTTP Request Basic Auth: %v\n%s", basic, h.auditLog.String())
	}
	wantParams(t, find(events, "HTTP Request Parameters")[0], map[string]any{"grant_type": "refresh_token", "refresh_token": "redacted", "scope": "openid"})
	for _, s := range []string{secret, refreshToken} {
		if strings.Contains(h.auditLog.String(), s) {
			t.Errorf("the audit events show %q", s)
		}
	}
}

// The cli_password flow's headers are audited as present, never with their values.
func TestCustomHeadersAudited(t *testing.T) {
	h, _ := newLDAPHarness(t, issuer.TypeLDAP)
	h.passwordAuthorize(newLogin(), ldapIDPName, "pinny", "pinny-password")
	headers := find(h.auditLog.events(t), "HTTP Request Custom Headers Used")
	if len(headers) != 1 || headers[0]["Pinniped-Username"] != true || headers[0]["Pinniped-Password"] != true {
		t.Errorf("HTTP Request Custom Headers Used: %v", headers)
	}
	if out := h.auditLog.String(); strings.Contains(out, "pinny-password") || strings.Contains(out, `"pinny"`) {
		t.Errorf("the audit events show the credentials:\n%s", out)
	}
}

// A browser login at the LDAP form writes the form's parameters with only the error code in
// clear, ties each request to the login by its authorize ID, and names the identity provider at
// the authorize request and at each POST of the form, not at the form's GETs (as Pinniped).
func TestLoginFormAudited(t *testing.T) {
	h, _ := newLDAPHarness(t, issuer.TypeLDAP)
	l := newLogin()
	resp, _ := h.get(h.cli().AuthCodeURL(l.state, oidc.Nonce(l.nonce), oauth2.S256ChallengeOption(l.verifier)))
	state := resp.Request.URL.Query().Get("state")
	for _, password := range []string{"wrong-password-xyz", "pinny-password"} {
		resp, err := h.browser.PostForm(h.issuerURL+provider.LoginPath, url.Values{"state": {state}, "username": {"pinny"}, "password": {password}})
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	events := h.auditLog.events(t)
	// The requests in order: authorize, the form's GET, a POST, the GET again with the error,
	// the last POST.
	params := find(events, "HTTP Request Parameters")
	if len(params) != 5 {
		t.Fatalf("%d parameter events, want 5:\n%s", len(params), h.auditLog.String())
	}
	login := params[1:]
	wantParams(t, login[0], map[string]any{"state": "redacted"})
	wantParams(t, login[1], map[string]any{"state": "redacted", "username": "redacted", "password": "redacted"})
	wantParams(t, login[2], map[string]any{"state": "redacted", "err": "login_error"})
	if got := len(find(events, "Using Upstream IDP")); got != 3 {
		t.Errorf("%d Using Upstream IDP events, want 3 (authorize and two POSTs)", got)
	}
	redirect := find(events, "Upstream Authorize Redirect")
	back := find(events, "AuthorizeID From Parameters")
	if len(redirect) != 1 || len(back) != 4 {
		t.Fatalf("%d Upstream Authorize Redirect and %d AuthorizeID From Parameters events", len(redirect), len(back))
	}
	for _, ev := range back {
		if ev["authorizeID"] != redirect[0]["authorizeID"] {
			t.Errorf("authorize ID %v, want %v", ev["authorizeID"], redirect[0]["authorizeID"])
		}
	}
	if len(find(events, "Session Started")) != 1 {
		t.Errorf("the login did not finish:\n%s", h.auditLog.String())
	}
	out := h.auditLog.String()
	for _, secret := range []string{state, l.state, l.nonce, l.verifier, "wrong-password-xyz", "pinny-password", `"pinny"`} {
		if strings.Contains(out, secret) {
			t.Errorf("the audit events show %q", secret)
		}
	}
}
