package oauth

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/idtransform"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// auditLog collects audit events written by the test server's goroutines.
type auditLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (a *auditLog) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.b.Write(p)
}

func (a *auditLog) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.b.String()
}

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
		if !issued[audit.TokenID(raw)] {
			t.Errorf("no ID Token Issued event with the SHA-256 of an issued token")
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
