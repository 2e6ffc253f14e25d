package provider

import (
	"context"
	"strings"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/token/hmac"
)

// Prefixes of the opaque tokens, as Pinniped's: they make a token recognizable when it turns up
// out of context (in a log, a repository), and each kind is refused where another is expected.
const (
	AuthorizeCodePrefix = "pin_ac_"
	AccessTokenPrefix   = "pin_at_"
	RefreshTokenPrefix  = "pin_rt_"
)

// prefixedHMAC is fosite's HMAC token strategy with Pinniped's prefixes. fosite's own prefixed
// strategy (v0.49) writes the fixed "ory_" prefixes, so ours wraps the unprefixed one. The
// signature, which names the stored Secret, is the part after the token's dot, so it does not
// depend on the prefix: tokens Pinniped issued find their sessions.
type prefixedHMAC struct {
	*oauth2.HMACSHAStrategyUnPrefixed
}

var _ oauth2.CoreStrategy = prefixedHMAC{}

func newPrefixedHMAC(cfg *fosite.Config) prefixedHMAC {
	return prefixedHMAC{oauth2.NewHMACSHAStrategyUnPrefixed(&hmac.HMACStrategy{Config: cfg}, cfg)}
}

// prefixed prefixes a token fosite generated.
func prefixed(prefix string) func(token, signature string, err error) (string, string, error) {
	return func(token, signature string, err error) (string, string, error) {
		if err != nil {
			return "", "", err
		}
		return prefix + token, signature, nil
	}
}

// unprefixed is token without its prefix, or fosite.ErrInvalidTokenFormat when it lacks it.
func unprefixed(prefix, token, what string) (string, error) {
	rest, ok := strings.CutPrefix(token, prefix)
	if !ok {
		return "", fosite.ErrInvalidTokenFormat.WithDebugf("%s does not start with %q", what, prefix)
	}
	return rest, nil
}

func (s prefixedHMAC) GenerateAuthorizeCode(ctx context.Context, r fosite.Requester) (string, string, error) {
	return prefixed(AuthorizeCodePrefix)(s.HMACSHAStrategyUnPrefixed.GenerateAuthorizeCode(ctx, r))
}

func (s prefixedHMAC) ValidateAuthorizeCode(ctx context.Context, r fosite.Requester, code string) error {
	rest, err := unprefixed(AuthorizeCodePrefix, code, "authorization code")
	if err != nil {
		return err
	}
	return s.HMACSHAStrategyUnPrefixed.ValidateAuthorizeCode(ctx, r, rest)
}

func (s prefixedHMAC) GenerateAccessToken(ctx context.Context, r fosite.Requester) (string, string, error) {
	return prefixed(AccessTokenPrefix)(s.HMACSHAStrategyUnPrefixed.GenerateAccessToken(ctx, r))
}

func (s prefixedHMAC) ValidateAccessToken(ctx context.Context, r fosite.Requester, token string) error {
	rest, err := unprefixed(AccessTokenPrefix, token, "access token")
	if err != nil {
		return err
	}
	return s.HMACSHAStrategyUnPrefixed.ValidateAccessToken(ctx, r, rest)
}

func (s prefixedHMAC) GenerateRefreshToken(ctx context.Context, r fosite.Requester) (string, string, error) {
	return prefixed(RefreshTokenPrefix)(s.HMACSHAStrategyUnPrefixed.GenerateRefreshToken(ctx, r))
}

func (s prefixedHMAC) ValidateRefreshToken(ctx context.Context, r fosite.Requester, token string) error {
	rest, err := unprefixed(RefreshTokenPrefix, token, "refresh token")
	if err != nil {
		return err
	}
	return s.HMACSHAStrategyUnPrefixed.ValidateRefreshToken(ctx, r, rest)
}
