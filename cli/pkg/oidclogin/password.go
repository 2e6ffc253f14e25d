package oidclogin

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
)

// The headers on which a Pinniped Supervisor takes the user's credentials in the cli_password flow.
const (
	usernameHeader = "Pinniped-Username"
	passwordHeader = "Pinniped-Password"
)

// passwordLogin runs a Pinniped Supervisor's cli_password flow: the credentials go on the
// authorization request, and the Supervisor answers with the redirect to the (unserved) redirect
// URI, whose query carries the code.
func (l *login) passwordLogin(ctx context.Context, a authRequest) (*Token, error) {
	username, password, err := l.credentials()
	if err != nil {
		return nil, err
	}
	redirect := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(int(l.cfg.ListenPort))), Path: callbackPath}
	authURL := l.oauth2Config(redirect.String()).AuthCodeURL(a.state, a.params...)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, fmt.Errorf("building the authorization request: %w", err)
	}
	req.Header.Set(usernameHeader, username)
	req.Header.Set(passwordHeader, password)

	client := *l.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		return nil, explainRequestError("the password login at "+l.disc.AuthorizationEndpoint, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	location, err := resp.Location()
	if err != nil || resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil, fmt.Errorf("the issuer answered the password login with %s instead of a redirect (the %s flow needs a Pinniped Supervisor)", resp.Status, FlowCLIPassword)
	}
	if location.Scheme != redirect.Scheme || location.Host != redirect.Host || location.Path != redirect.Path {
		// Without its query: it is not ours to print.
		elsewhere := url.URL{Scheme: location.Scheme, Host: location.Host, Path: location.Path}
		return nil, fmt.Errorf("the issuer redirected the password login to %s instead of %s (the %s flow needs a Pinniped Supervisor)", elsewhere.String(), redirect.String(), FlowCLIPassword)
	}
	return l.complete(ctx, a, redirect.String(), location.Query(), true)
}

// credentials returns the configured username and password, prompting for what is missing.
func (l *login) credentials() (string, string, error) {
	username, password := l.cfg.Username, l.cfg.Password
	if username != "" && password != "" {
		return username, password, nil
	}
	if l.cfg.Prompter == nil {
		return "", "", ErrNoCredentials
	}
	if name := l.cfg.UpstreamIdentityProviderName; name != "" {
		fmt.Fprintf(l.out, "\nLog in to %s\n\n", name)
	}
	var err error
	if username == "" {
		if username, err = l.cfg.Prompter.ReadLine("Username: "); err != nil {
			return "", "", fmt.Errorf("reading the username: %w", err)
		}
	}
	if password == "" {
		if password, err = l.cfg.Prompter.ReadPassword("Password: "); err != nil {
			return "", "", err
		}
	}
	if username == "" || password == "" {
		return "", "", fmt.Errorf("%w: an empty one was entered", ErrNoCredentials)
	}
	return username, password, nil
}
