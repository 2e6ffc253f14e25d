package oidcprovider

import (
	"context"
	"errors"

	"github.com/ory/fosite"
	"k8s.io/klog/v2"

	"sealion.dev/servers/supervisor/internal/idtransform"
	"sealion.dev/servers/supervisor/internal/upstreamgithub"
)

// githubCallback redeems GitHub's code and reads the user; GitHub's own subject (API URL, login
// and ID) becomes the downstream sub.
func (p *provider) githubCallback(ctx context.Context, res *resolved, code string) (*upstreamUser, error) {
	token, err := res.github.ExchangeAuthcode(ctx, code, p.iss.Endpoint(CallbackPath))
	if err != nil {
		return nil, fosite.ErrAccessDenied.WithHint("GitHub refused the authorization code").WithWrap(err)
	}
	id, err := res.github.GetUser(ctx, token, res.idp.DisplayName)
	if errors.Is(err, upstreamgithub.ErrNotAllowed) {
		return nil, fosite.ErrAccessDenied.WithHint("The user is not a member of an organization allowed to log in.")
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Reading the GitHub user failed", "idp", res.idp.DisplayName)
		return nil, errUpstreamFailed.WithWrap(err)
	}
	return &upstreamUser{
		subject:  id.Subject,
		identity: idtransform.Identity{Username: id.Username, Groups: id.Groups},
		github:   &GitHubSessionData{UpstreamAccessToken: token},
	}, nil
}
