package provider

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"

	"github.com/coreos/go-oidc/v3/oidc"

	"sealion.dev/servers/supervisor/internal/oauth/sessions"
	"sealion.dev/servers/supervisor/internal/signingkeys"
)

// IDTokenHint is what the end-session endpoint learns from an ID token a client hands back: the
// client it was issued to (azp), its subject (sub) and when its login was (rat), which together
// name the login (sessions.LoginKey).
type IDTokenHint struct {
	ClientID, Subject string
	LoginTime         int64
}

// VerifyIDTokenHint checks that raw is an ID token this issuer gave a client: signed with a key
// its JWKS publishes, of this issuer, with an authorized party that is its only audience. It may
// have expired (RP-Initiated Logout accepts those). The cluster tokens of token exchanges are
// refused: their audience is the cluster's.
func (p *Provider) VerifyIDTokenHint(ctx context.Context, raw string) (*IDTokenHint, error) {
	keys := make([]crypto.PublicKey, 0, len(p.Issuer.JWKS.Public.Keys))
	for _, k := range p.Issuer.JWKS.Public.Keys {
		keys = append(keys, k.Key)
	}
	verifier := oidc.NewVerifier(p.Issuer.URL, &oidc.StaticKeySet{PublicKeys: keys}, &oidc.Config{
		SkipClientIDCheck: true, SkipExpiryCheck: true, SupportedSigningAlgs: []string{signingkeys.Algorithm},
	})
	tok, err := verifier.Verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	var claims struct {
		AZP string `json:"azp"`
		RAT int64  `json:"rat"`
	}
	if err := tok.Claims(&claims); err != nil {
		return nil, err
	}
	if claims.AZP == "" || claims.RAT == 0 || len(tok.Audience) != 1 || tok.Audience[0] != claims.AZP {
		return nil, errors.New("not an ID token of a client's login")
	}
	return &IDTokenHint{ClientID: claims.AZP, Subject: tok.Subject, LoginTime: claims.RAT}, nil
}

// ErrSessionNotEnded is the failure to end a session now: the storage failed.
var ErrSessionNotEnded = errors.New("the session could not be ended")

// EndSession ends the stored sessions of the login hint names, as the revocation endpoint ends
// one, and returns their IDs (none when they ended already).
func (p *Provider) EndSession(ctx context.Context, hint *IDTokenHint) ([]string, error) {
	ended, err := p.Storage.EndLogin(ctx, sessions.LoginKey(hint.Subject, hint.ClientID, hint.LoginTime), hint.ClientID, hint.Subject)
	if err != nil {
		return ended, fmt.Errorf("%w: %w", ErrSessionNotEnded, err)
	}
	return ended, nil
}

// PostLogoutRedirectAllowed reports whether the end-session endpoint may send a browser back to uri
// for the client clientID: one of an OIDCClient's allowedPostLogoutRedirectURIs, exactly.
// pinniped-cli has none: it signs out with the revocation endpoint.
func (p *Provider) PostLogoutRedirectAllowed(ctx context.Context, clientID, uri string) bool {
	client, err := p.store.GetClient(ctx, clientID)
	if err != nil {
		return false
	}
	c, ok := client.(*confidentialClient)
	return ok && slices.Contains(c.postLogoutRedirectURIs, uri)
}
