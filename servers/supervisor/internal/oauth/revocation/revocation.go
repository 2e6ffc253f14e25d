// Package revocation serves the token revocation endpoint (RFC 7009), an addition to Pinniped's
// Supervisor: a client signs its user out by revoking its refresh token (or an access token). The
// whole session ends at once: its records are deleted and its upstream tokens revoked, as when a
// login ends any other way. pinniped logout uses it.
package revocation

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ory/fosite"

	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

// New returns the revocation endpoint of p's issuer. Clients authenticate as at the token
// endpoint (pinniped-cli by its client_id, OIDCClients with HTTP basic authentication), with the
// same count of failures per client and source; a client may revoke only its own tokens. As RFC
// 7009 asks, a token that is unknown, expired or already revoked is answered as revoked, and so
// is another client's (which is not revoked): no client learns whether another's token exists.
func New(p *provider.Provider) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		clientID, err := revoke(p, r)
		if err == nil {
			p.Audit.Event(ctx, "Token Revoked By Client", audit.Fields{}, "clientID", clientID)
		}
		if errors.Is(err, fosite.ErrTemporarilyUnavailable) {
			// fosite answers 200 to every error but invalid_request and invalid_client; this one
			// the client must retry (RFC 7009 2.2.1), or the session would live on unnoticed.
			w.Header().Set("Content-Type", "application/json;charset=UTF-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "temporarily_unavailable",
				"error_description": "The session could not be revoked now; try again later."})
			return
		}
		p.OAuth.WriteRevocationResponse(ctx, w, err)
	})
}

// revoke revokes the request's token and returns its client's ID.
func revoke(p *provider.Provider, r *http.Request) (string, error) {
	if r.Method != http.MethodPost {
		return "", fosite.ErrInvalidRequest.WithHintf("HTTP method is %q, expected \"POST\".", r.Method)
	}
	ctx := r.Context()
	client, err := p.AuthenticateClient(ctx, r)
	if err != nil {
		return "", err
	}
	token := r.PostForm.Get("token")
	if token == "" {
		return "", fosite.ErrInvalidRequest.WithHint("The 'token' parameter is missing.")
	}
	// A hint only orders the search (RFC 7009 2.1); an unknown one is ignored.
	return client.GetID(), p.RevokeToken(ctx, token, fosite.TokenType(r.PostForm.Get("token_type_hint")), client)
}
