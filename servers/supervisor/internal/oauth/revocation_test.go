package oauth

import (
	"errors"
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/oauth2"
	"k8s.io/apimachinery/pkg/runtime"
	kubetesting "k8s.io/client-go/testing"

	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// revoke POSTs an RFC 7009 revocation, as id (with secret, by HTTP basic authentication, when
// not empty), and returns the status and the JSON body, if any.
func (h *harness) revoke(form url.Values, id, secret string) (int, map[string]any) {
	h.t.Helper()
	return h.postTo(provider.RevocationPath, form, id, secret)
}

// A client signs its user out by revoking its refresh token: every token of the session stops
// working at once, its records are gone and its upstream refresh token is revoked.
func TestRevocationEndsTheSession(t *testing.T) {
	h := newHarness(t, nil)
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	upstream := h.upstream.upstreamTokens()

	status, body := h.revoke(url.Values{"token": {tok.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {provider.PinnipedCLIClientID}}, "", "")
	if status != http.StatusOK {
		t.Fatalf("revocation: %d %v", status, body)
	}
	if _, err := h.refresh(h.cli(), tok.RefreshToken); oauthError(t, err) != "invalid_grant" {
		t.Errorf("refresh after the revocation: %v, want invalid_grant", err)
	}
	if status, _ := h.exchange(tok.AccessToken, "cluster-1"); status == http.StatusOK {
		t.Error("the access token still works after its session was revoked")
	}
	if got := h.storedTypes(); got[typeAccessToken] != 0 || got[typeRefreshToken] != 0 {
		t.Errorf("after the revocation, stored %v; want no access or refresh token", got)
	}
	if got := h.upstream.revokedTokens(); len(got) != 1 || got[0] != upstream[0] {
		t.Errorf("upstream revoked %v, want the session's refresh token %v", got, upstream)
	}
	if got := find(h.auditLog.events(t), "Token Revoked By Client"); len(got) != 1 || got[0]["clientID"] != provider.PinnipedCLIClientID {
		t.Errorf("audit events of the revocation: %v, want one naming the client", got)
	}

	// Revoking it again, or a token never issued, is no error (RFC 7009 2.2).
	for _, token := range []string{tok.RefreshToken, "pin_rt_made-up.token", "not-even-a-token"} {
		if status, body := h.revoke(url.Values{"token": {token}, "client_id": {provider.PinnipedCLIClientID}}, "", ""); status != http.StatusOK {
			t.Errorf("revoking %q: %d %v, want 200", token, status, body)
		}
	}
}

// A client revokes only its own tokens, authenticated as at the token endpoint; the endpoint
// takes POSTed forms only.
func TestRevocationRefusals(t *testing.T) {
	h := newHarness(t, nil)
	h.addOIDCClient(clientID, fullSpec(), clientSecret)
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	refresh := url.Values{"token": {tok.RefreshToken}}
	for _, tt := range []struct {
		name       string
		form       url.Values
		id, secret string
		wantStatus int
		wantError  string
	}{
		// Answered as an unknown token, so that no client learns whether another's exists; it is
		// not revoked (the refresh below).
		{name: "another client's token", form: refresh, id: clientID, secret: clientSecret, wantStatus: http.StatusOK},
		{name: "a wrong client secret", form: refresh, id: clientID, secret: "wrong", wantStatus: http.StatusUnauthorized, wantError: "invalid_client"},
		{name: "an unknown client", form: url.Values{"token": {tok.RefreshToken}, "client_id": {"someone"}}, wantStatus: http.StatusUnauthorized, wantError: "invalid_client"},
		{name: "no token", form: url.Values{"client_id": {provider.PinnipedCLIClientID}}, wantStatus: http.StatusBadRequest, wantError: "invalid_request"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, body := h.revoke(tt.form, tt.id, tt.secret)
			if status != tt.wantStatus || (tt.wantError != "" && body["error"] != tt.wantError) {
				t.Errorf("got %d %v, want %d %s", status, body, tt.wantStatus, tt.wantError)
			}
		})
	}
	// A GET, even with every parameter in its query, revokes nothing.
	resp, err := h.server.Client().Get(h.issuerURL + provider.RevocationPath + "?" + url.Values{"token": {tok.RefreshToken}, "client_id": {provider.PinnipedCLIClientID}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET: %s, want 400", resp.Status)
	}
	if _, err := h.refresh(h.cli(), tok.RefreshToken); err != nil {
		t.Errorf("the session no longer refreshes after refused revocations: %v", err)
	}
}

// A revocation the storage cannot carry out now is answered 503, for the client to retry, not as
// done; the session is intact.
func TestRevocationStorageFailure(t *testing.T) {
	h := newHarness(t, nil)
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	h.clientset.PrependReactor("list", "secrets", func(kubetesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcdserver: request timed out")
	})
	status, body := h.revoke(url.Values{"token": {tok.RefreshToken}, "client_id": {provider.PinnipedCLIClientID}}, "", "")
	if status != http.StatusServiceUnavailable || body["error"] != "temporarily_unavailable" {
		t.Errorf("revocation while the storage fails: %d %v, want 503 temporarily_unavailable", status, body)
	}
}
