// Package upstreamlogins runs the Supervisor's OAuth endpoints (servers/supervisor/internal/oauth)
// against a real kube-apiserver, which stores the sessions in Secrets, and real upstream
// identity providers: Dex as an OIDC provider (a full authorization code login without a
// browser, net/http posting Dex's login form; a refresh that re-checks Dex; a token exchange for
// a cluster), slapd and a Samba domain controller as LDAP and Active Directory servers (the
// CLI's cli_password flow and the Supervisor's login form; refreshes that see new groups, a
// deleted user and a disabled account), and the GitHub double (the web flow and refreshes). The
// pinniped CLI built from this checkout also logs in with cli_password as kubectl's credential
// plugin, starting from the issuer's discovery documents.
package upstreamlogins
