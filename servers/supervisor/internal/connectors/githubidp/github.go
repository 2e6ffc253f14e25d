// Package githubidp is the connector of GitHubIdentityProviders, and their client: it builds the
// authorization URL of GitHub's web flow, exchanges the code for an access token, and reads who
// the user is (login, ID, organizations, teams) through the REST API to decide whether they may
// log in and which username, groups and subject they get. A refresh reads it all again with the
// stored access token.
//
// github.com (or api.github.com) serves OAuth at https://github.com and the API at
// https://api.github.com; a GitHub Enterprise Server host serves both, the API below /api/v3.
package githubidp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
)

const (
	// DefaultHost is spec.githubAPI.host when unset.
	DefaultHost = "github.com"
	// APIVersion is sent in X-GitHub-Api-Version with every API request.
	APIVersion = "2022-11-28"

	githubAPIBaseURL = "https://api.github.com"
	githubWebURL     = "https://github.com"
)

// Scopes are requested at authorization: the user's profile and their organizations and teams.
var Scopes = []string{"read:user", "read:org"}

// ErrNotAllowed means the user belongs to none of the allowed organizations.
var ErrNotAllowed = errors.New("user is not allowed to log in due to organization membership policy")

// ErrSubjectChanged means a refresh found a different user (another ID, or a changed login).
var ErrSubjectChanged = errors.New("the GitHub identity changed since login")

// Config is a GitHubIdentityProvider's spec, with its client credentials read from the Secret.
// Empty fields take the defaults of the API.
type Config struct {
	// Host is spec.githubAPI.host: "github.com" (default), "api.github.com", or the host[:port]
	// of a GitHub Enterprise Server.
	Host         string
	ClientID     string
	ClientSecret string
	// UsernameAttribute defaults to login:id.
	UsernameAttribute idpv1alpha1.GitHubUsernameAttribute
	// GroupNameAttribute defaults to slug.
	GroupNameAttribute idpv1alpha1.GitHubGroupNameAttribute
	// Policy defaults to OnlyUsersFromAllowedOrganizations, which needs AllowedOrganizations;
	// AllGitHubUsers needs it empty.
	Policy               idpv1alpha1.GitHubAllowedAuthOrganizationsPolicy
	AllowedOrganizations []string
	// HTTPClient reaches GitHub, trusting spec.githubAPI.tls; see NewHTTPClient. Nil means a
	// client that trusts the system roots.
	HTTPClient *http.Client
}

// Identity is who a GitHub user is to the Supervisor.
type Identity struct {
	// Login and ID are GitHub's, the ID in decimal.
	Login string
	ID    string
	// Username is formed according to the username attribute.
	Username string
	// Groups are "<organization login>/<team slug or name>", teams of disallowed organizations
	// left out.
	Groups []string
	// Subject is the downstream ID token's sub: the API base URL with the identity provider's
	// display name, the login and the ID as query parameters.
	Subject string
}

// Provider talks to one GitHub for one GitHubIdentityProvider. It is safe for concurrent use.
type Provider struct {
	cfg        Config
	apiBaseURL string
	oauth      oauth2.Config
	allowed    map[string]bool // lower-case organization logins; empty allows all
}

// New checks a configuration and returns a Provider for it.
func New(cfg Config) (*Provider, error) {
	if cfg.Host == "" {
		cfg.Host = DefaultHost
	}
	if cfg.UsernameAttribute == "" {
		cfg.UsernameAttribute = idpv1alpha1.GitHubUsernameLoginAndID
	}
	if cfg.GroupNameAttribute == "" {
		cfg.GroupNameAttribute = idpv1alpha1.GitHubGroupNameSlug
	}
	if cfg.Policy == "" {
		cfg.Policy = idpv1alpha1.GitHubAllowedAuthOrganizationsPolicyOnlyUsersFromAllowedOrganizations
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: time.Minute}
	}
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, errors.New("github: client ID and client secret are required")
	}
	if err := ValidateClaims(cfg.UsernameAttribute, cfg.GroupNameAttribute); err != nil {
		return nil, err
	}
	if err := ValidatePolicy(cfg.Policy, cfg.AllowedOrganizations); err != nil {
		return nil, err
	}
	if _, _, err := URLs(cfg.Host); err != nil {
		return nil, err
	}
	return newProvider(cfg), nil
}

// newProvider builds a Provider from a valid configuration with defaults applied.
func newProvider(cfg Config) *Provider {
	webURL, apiBaseURL, _ := URLs(cfg.Host)
	p := &Provider{
		cfg:        cfg,
		apiBaseURL: apiBaseURL,
		oauth: oauth2.Config{
			ClientID:     cfg.ClientID,
			ClientSecret: cfg.ClientSecret,
			Scopes:       Scopes,
			Endpoint: oauth2.Endpoint{
				AuthURL:   webURL + "/login/oauth/authorize",
				TokenURL:  webURL + "/login/oauth/access_token",
				AuthStyle: oauth2.AuthStyleInParams,
			},
		},
		allowed: map[string]bool{},
	}
	for _, org := range cfg.AllowedOrganizations {
		p.allowed[strings.ToLower(org)] = true
	}
	return p
}

// URLs returns the web root (OAuth endpoints) and the API base URL of spec.githubAPI.host.
func URLs(host string) (webURL, apiBaseURL string, err error) {
	hostname, port, err := splitHost(host)
	if err != nil {
		return "", "", err
	}
	lower := strings.ToLower(hostname)
	if (lower == "github.com" || lower == "api.github.com") && (port == "" || port == "443") {
		return githubWebURL, githubAPIBaseURL, nil
	}
	authority := hostname
	switch {
	case port != "" && port != "443":
		authority = net.JoinHostPort(hostname, port)
	case strings.Contains(hostname, ":"): // IPv6
		authority = "[" + hostname + "]"
	}
	webURL = "https://" + authority
	return webURL, webURL + "/api/v3", nil
}

// apiAddress is the host:port of the API of spec.githubAPI.host, the one to dial to check
// the connection.
func apiAddress(host string) (string, error) {
	_, apiBaseURL, err := URLs(host)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(apiBaseURL)
	if err != nil {
		return "", err
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// splitHost parses host[:port]: a DNS name or an IP address (IPv6 in brackets when a port
// follows), no scheme or path.
func splitHost(host string) (hostname, port string, err error) {
	bad := func(reason string) (string, string, error) {
		return "", "", fmt.Errorf("github: spec.githubAPI.host (%q) is not valid: %s", host, reason)
	}
	if host == "" {
		return bad("must not be empty")
	}
	if strings.ContainsAny(host, "/?#@ ") {
		return bad("must be host or host:port, without a scheme or path")
	}
	hostname = host
	if h, p, splitErr := net.SplitHostPort(host); splitErr == nil {
		n, convErr := strconv.Atoi(p)
		if convErr != nil || n < 1 || n > 65535 {
			return bad("port must be a number from 1 to 65535")
		}
		hostname, port = h, p
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		hostname = host[1 : len(host)-1]
	}
	if ip := net.ParseIP(hostname); ip != nil {
		return hostname, port, nil
	}
	for _, label := range strings.Split(hostname, ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") ||
			strings.IndexFunc(label, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
			}) >= 0 {
			return bad("not a DNS name or IP address")
		}
	}
	return hostname, port, nil
}

// ValidateClaims checks the username and group name attributes.
func ValidateClaims(username idpv1alpha1.GitHubUsernameAttribute, groups idpv1alpha1.GitHubGroupNameAttribute) error {
	switch username {
	case idpv1alpha1.GitHubUsernameID, idpv1alpha1.GitHubUsernameLogin, idpv1alpha1.GitHubUsernameLoginAndID:
	default:
		return fmt.Errorf("github: spec.claims.username (%q) is not valid", username)
	}
	switch groups {
	case idpv1alpha1.GitHubGroupNameName, idpv1alpha1.GitHubGroupNameSlug:
	default:
		return fmt.Errorf("github: spec.claims.groups (%q) is not valid", groups)
	}
	return nil
}

// ValidatePolicy checks that the policy agrees with the allowed organizations: only members of
// listed organizations, or every user with none listed.
func ValidatePolicy(policy idpv1alpha1.GitHubAllowedAuthOrganizationsPolicy, allowed []string) error {
	switch {
	case policy == idpv1alpha1.GitHubAllowedAuthOrganizationsPolicyOnlyUsersFromAllowedOrganizations && len(allowed) > 0,
		policy == idpv1alpha1.GitHubAllowedAuthOrganizationsPolicyAllGitHubUsers && len(allowed) == 0:
		return nil
	case policy != idpv1alpha1.GitHubAllowedAuthOrganizationsPolicyOnlyUsersFromAllowedOrganizations &&
		policy != idpv1alpha1.GitHubAllowedAuthOrganizationsPolicyAllGitHubUsers:
		return fmt.Errorf("github: spec.allowAuthentication.organizations.policy (%q) is not valid", policy)
	case len(allowed) > 0:
		return errors.New("github: spec.allowAuthentication.organizations.policy must be 'OnlyUsersFromAllowedOrganizations' when spec.allowAuthentication.organizations.allowed has organizations listed")
	default:
		return errors.New("github: spec.allowAuthentication.organizations.policy must be 'AllGitHubUsers' when spec.allowAuthentication.organizations.allowed is empty")
	}
}

// NewHTTPClient returns a client for GitHub that trusts caBundle (PEM), or the system roots
// when it is empty, and connects within settings' connect timeout.
func NewHTTPClient(caBundle []byte, settings connectors.Settings) (*http.Client, error) {
	tlsConfig, err := clientTLS(caBundle)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: settings.HTTPTransport(tlsConfig), Timeout: time.Minute}, nil
}

func clientTLS(caBundle []byte) (*tls.Config, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("github: the CA bundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	return tlsConfig, nil
}

// APIBaseURL is https://api.github.com or https://HOST[:PORT]/api/v3, the root of the subject.
func (p *Provider) APIBaseURL() string { return p.apiBaseURL }

// ClientID is the GitHub App's or OAuth App's client ID.
func (p *Provider) ClientID() string { return p.cfg.ClientID }

// AuthorizeURL is where the browser goes to log in; GitHub then redirects to redirectURI, which
// differs per FederationDomain, with the code and state.
func (p *Provider) AuthorizeURL(redirectURI, state string, opts ...oauth2.AuthCodeOption) string {
	conf := p.oauth
	conf.RedirectURL = redirectURI
	return conf.AuthCodeURL(state, opts...)
}

// ExchangeAuthcode trades the code from the callback for a GitHub access token; redirectURI is
// the one the authorization used.
func (p *Provider) ExchangeAuthcode(ctx context.Context, code, redirectURI string, opts ...oauth2.AuthCodeOption) (string, error) {
	conf := p.oauth
	conf.RedirectURL = redirectURI
	tok, err := conf.Exchange(context.WithValue(ctx, oauth2.HTTPClient, p.cfg.HTTPClient), code, opts...)
	if err != nil {
		return "", fmt.Errorf("github: exchanging the authorization code: %w", err)
	}
	return tok.AccessToken, nil
}

// GetUser reads the user behind accessToken and applies the organization policy, which may
// refuse them with ErrNotAllowed. idpDisplayName is the identity provider's name in the
// FederationDomain, part of the subject.
func (p *Provider) GetUser(ctx context.Context, accessToken, idpDisplayName string) (*Identity, error) {
	if accessToken == "" {
		return nil, errors.New("github: empty access token")
	}
	c := apiClient{http: p.cfg.HTTPClient, base: p.apiBaseURL, token: accessToken}
	user, err := c.user(ctx)
	if err != nil {
		return nil, err
	}
	id := &Identity{Login: user.Login, ID: strconv.FormatInt(user.ID, 10)}
	id.Subject = fmt.Sprintf("%s?idpName=%s&login=%s&id=%s", p.apiBaseURL,
		url.QueryEscape(idpDisplayName), url.QueryEscape(id.Login), url.QueryEscape(id.ID))
	switch p.cfg.UsernameAttribute {
	case idpv1alpha1.GitHubUsernameID:
		id.Username = id.ID
	case idpv1alpha1.GitHubUsernameLogin:
		id.Username = id.Login
	default:
		id.Username = id.Login + ":" + id.ID
	}

	if len(p.allowed) > 0 {
		orgs, err := c.orgs(ctx)
		if err != nil {
			return nil, err
		}
		if !p.anyAllowed(orgs) {
			return nil, fmt.Errorf("github: %s: %w", id.Login, ErrNotAllowed)
		}
	}

	teams, err := c.teams(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, t := range teams {
		if len(p.allowed) > 0 && !p.allowed[strings.ToLower(t.org)] {
			continue
		}
		group := t.org + "/" + t.slug
		if p.cfg.GroupNameAttribute == idpv1alpha1.GitHubGroupNameName {
			group = t.org + "/" + t.name
		}
		if !seen[group] {
			seen[group] = true
			id.Groups = append(id.Groups, group)
		}
	}
	return id, nil
}

// Refresh reads the user again with the access token stored at login: they must still be
// allowed and still have the same subject (ID and login); the groups are read afresh.
func (p *Provider) Refresh(ctx context.Context, accessToken, idpDisplayName, subject string) (*Identity, error) {
	id, err := p.GetUser(ctx, accessToken, idpDisplayName)
	if err != nil {
		return nil, err
	}
	if id.Subject != subject {
		return nil, fmt.Errorf("github: subject %q is now %q: %w", subject, id.Subject, ErrSubjectChanged)
	}
	return id, nil
}

func (p *Provider) anyAllowed(orgs []string) bool {
	for _, o := range orgs {
		if p.allowed[strings.ToLower(o)] {
			return true
		}
	}
	return false
}
