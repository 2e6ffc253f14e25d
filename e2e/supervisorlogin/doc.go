// Package supervisorlogin runs the Supervisor's OAuth endpoints (core/supervisor/oidcprovider)
// against a real kube-apiserver, which stores the sessions in Secrets, and the Dex fixture as the
// upstream OIDC identity provider: a full authorization code login without a browser (net/http
// posts Dex's login form), a refresh that re-checks Dex, and a token exchange for a cluster.
package supervisorlogin
