package oauth

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// TestOpaqueTokenPrefixes checks that authorization codes, access and refresh tokens carry
// Pinniped's prefixes, and that each is refused without its own: with fosite's "ory_" prefix,
// with none, or with the prefix of another kind. Each refusal comes before the token's first
// good use, so the token itself was valid.
func TestOpaqueTokenPrefixes(t *testing.T) {
	h := newHarness(t, nil)
	l := h.login()
	if !strings.HasPrefix(l.code, provider.AuthorizeCodePrefix) {
		t.Fatalf("authorization code %q lacks %q", l.code, provider.AuthorizeCodePrefix)
	}
	rest := strings.TrimPrefix(l.code, provider.AuthorizeCodePrefix)
	for _, code := range []string{rest, "ory_ac_" + rest, provider.AccessTokenPrefix + rest} {
		_, err := h.cli().Exchange(h.clientContext(), code, oauth2.VerifierOption(l.verifier))
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
			t.Errorf("redeeming %q: %v; want invalid_grant", code, err)
		}
	}
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatalf("redeeming the prefixed code: %v", err)
	}
	if !strings.HasPrefix(tok.AccessToken, provider.AccessTokenPrefix) || !strings.HasPrefix(tok.RefreshToken, provider.RefreshTokenPrefix) {
		t.Fatalf("access token %q and refresh token %q; want prefixes %q and %q", tok.AccessToken, tok.RefreshToken, provider.AccessTokenPrefix, provider.RefreshTokenPrefix)
	}

	rest = strings.TrimPrefix(tok.AccessToken, provider.AccessTokenPrefix)
	for _, token := range []string{rest, "ory_at_" + rest, provider.RefreshTokenPrefix + rest} {
		if status, body := h.exchange(token, "cluster-1"); status == http.StatusOK {
			t.Errorf("token exchange of %q: %d %v; want a refusal", token, status, body)
		}
	}
	if status, body := h.exchange(tok.AccessToken, "cluster-1"); status != http.StatusOK {
		t.Errorf("token exchange of the prefixed access token: %d %v", status, body)
	}

	rest = strings.TrimPrefix(tok.RefreshToken, provider.RefreshTokenPrefix)
	for _, token := range []string{rest, "ory_rt_" + rest, provider.AccessTokenPrefix + rest} {
		_, err := h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: token}).Token()
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.Response.StatusCode != http.StatusBadRequest {
			t.Errorf("refreshing with %q: %v; want a 400 refusal", token, err)
		}
	}
	refreshed, err := h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refreshing with the prefixed refresh token: %v", err)
	}
	if !strings.HasPrefix(refreshed.AccessToken, provider.AccessTokenPrefix) || !strings.HasPrefix(refreshed.RefreshToken, provider.RefreshTokenPrefix) {
		t.Errorf("refreshed access token %q and refresh token %q lack their prefixes", refreshed.AccessToken, refreshed.RefreshToken)
	}
}
