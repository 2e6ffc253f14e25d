package steps

import (
	"context"

	"sealion.dev/fixtures/github"
	ghincluster "sealion.dev/fixtures/github/incluster"
	"sealion.dev/providers"
)

// GitHubImage is the GitHub double's image (tools/images github), run in the clusters Dex runs in
// (FixturesInCluster); the installs push or load it with the server image.
const GitHubImage = "localhost/sealion/github-fixture:dev"

// GitHubDouble is the GitHub double as the Supervisor reaches it: its host for a
// GitHubIdentityProvider's spec.githubAPI.host, and the CA of its certificate, which the browser
// trusts too.
type GitHubDouble struct {
	Host     string
	CABundle []byte

	stop func() error
}

// Close stops the double.
func (g *GitHubDouble) Close() error { return g.stop() }

// StartGitHubForCluster runs the GitHub double (users github.DefaultUser, app
// github.DefaultClientID with callbackURL, loggedIn signed in to every browser) where both the
// cluster's pods (the Supervisor) and this machine's browser reach it: on this machine's address
// for a cluster of this machine, else (FixturesInCluster) in the cluster
// (fixtures/github/incluster), tunnelled for the browser by the run's proxy (Cluster.Tunnel), the
// one through which the browser reaches the Supervisor there.
func StartGitHubForCluster(ctx context.Context, callbackURL, loggedIn string) (*GitHubDouble, error) {
	if c := ClusterFrom(ctx); c != nil && FixturesInCluster(c.Info) {
		proxy, err := c.Tunnel()
		if err != nil {
			return nil, err
		}
		g, err := ghincluster.Start(ctx, ghincluster.Options{Kubeconfig: c.Kubeconfig, Image: Image(ctx, GitHubImage), Tunnel: proxy,
			CallbackURL: callbackURL, LoggedIn: loggedIn})
		if err != nil {
			return nil, err
		}
		return &GitHubDouble{Host: g.Host, CABundle: g.CABundle, stop: g.Close}, nil
	}
	hostIP, err := providers.HostIPv4()
	if err != nil {
		return nil, err
	}
	g, err := github.Start(ctx, github.Options{ListenAddress: hostIP + ":0", CallbackURL: callbackURL, LoggedIn: loggedIn})
	if err != nil {
		return nil, err
	}
	return &GitHubDouble{Host: g.Host, CABundle: g.CABundle, stop: g.Close}, nil
}
