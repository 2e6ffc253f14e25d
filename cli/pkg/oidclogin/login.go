// Package oidclogin logs a user in at an OpenID Connect issuer from a command-line program, as
// "pinniped login oidc" does, so that other programs can do the same without the CLI.
//
// Login first looks in a session cache for tokens of an earlier login with the same issuer,
// client, scopes and upstream identity provider. It reuses an ID token valid for 10 more minutes,
// else it refreshes the session with its refresh token, else it logs in again. A refresh answered
// temporarily_unavailable (the Supervisor cannot reach the upstream identity provider) starts no
// new login, which would fail the same way: Login fails with ErrUpstreamUnavailable and the
// session stays cached for the next try. The login flows:
//
//   - browser_authcode (the default): authorization code flow with PKCE (S256), state and nonce.
//     The browser comes back to a listener on 127.0.0.1 (a random port unless one is given), with
//     response_mode=form_post when the issuer supports it; at the same time, on a terminal, the user
//     may paste the code (or the whole redirect URL) instead, for hosts whose browser cannot reach
//     the listener. The authorization URL is opened with $BROWSER or the system's opener, and
//     printed on a line of its own.
//   - device (LoginFlow, Supervisor and any issuer with RFC 8628's device authorization endpoint):
//     the user approves the login in a browser on any device, with the code the program shows,
//     while the program polls. Chosen by default when this machine can neither open a browser
//     nor prompt for a pasted code.
//   - cli_password (Pinniped Supervisor only): the username and password go as the headers
//     Pinniped-Username and Pinniped-Password on the authorization request, whose redirect carries
//     the code; nothing listens and no browser is involved.
//
// With a request audience, the access token is then exchanged (RFC 8693) for an ID token issued to
// that audience (Supervisor only); that token is not cached, being meant for one cluster.
package oidclogin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The login flows of a Pinniped Supervisor's identity providers.
const (
	FlowBrowserAuthcode = "browser_authcode"
	FlowCLIPassword     = "cli_password"
)

// How the program logs in at the issuer when the upstream flow is a browser's (Config.LoginFlow).
const (
	// LoginFlowBrowser: a browser on this machine comes back to the localhost listener, or the
	// user pastes the code.
	LoginFlowBrowser = "browser"
	// LoginFlowDevice: the device authorization grant (RFC 8628); the user approves in a browser
	// on any device. The issuer must offer it (the Supervisor does).
	LoginFlowDevice = "device"
)

const (
	// HTTPTimeout bounds each request to the issuer when the caller's client sets no timeout.
	HTTPTimeout = 60 * time.Second
	// LoginTimeout bounds a whole login, the user's time in the browser included.
	LoginTimeout = 90 * time.Minute

	// minIDTokenValidity keeps a cached ID token from expiring in the middle of a multi-request
	// kubectl command.
	minIDTokenValidity = 10 * time.Minute
	// minAccessTokenValidity leaves time to exchange a cached access token.
	minAccessTokenValidity = 10 * time.Second
	// SessionEndWarning is how long before its session's end the CLI warns its user that the
	// next login is near.
	SessionEndWarning = 15 * time.Minute

	callbackPath = "/callback"
)

// Config describes one login.
type Config struct {
	// Issuer is the https URL of the OpenID Connect issuer, exactly as its discovery document says.
	Issuer string
	// ClientID is the OAuth client, a public one (no secret), e.g. "pinniped-cli".
	ClientID string
	// Scopes default to offline_access, openid, email and profile.
	Scopes []string
	// HTTPClient makes every request to the issuer (give it the issuer's CA); a copy with
	// HTTPTimeout is used when it has no timeout. Nil means http.DefaultClient's settings.
	HTTPClient *http.Client

	// UpstreamIdentityProviderName and UpstreamIdentityProviderType choose one of a Pinniped
	// Supervisor's identity providers; the type may be empty when the name is unambiguous.
	UpstreamIdentityProviderName string
	UpstreamIdentityProviderType string
	// Flow is FlowBrowserAuthcode or FlowCLIPassword. Empty means the chosen upstream identity
	// provider's preferred flow, or FlowBrowserAuthcode.
	Flow string
	// LoginFlow is LoginFlowBrowser or LoginFlowDevice. Empty means the browser, unless this
	// machine can neither open a browser (see browserAvailable) nor prompt (no Prompter), and
	// SkipBrowser is not set, and the issuer offers the device flow.
	LoginFlow string
	// RequestAudience, when set, asks for an ID token for this audience by RFC 8693 token exchange.
	RequestAudience string

	// ListenPort is the port of the localhost listener; 0 picks a free one.
	ListenPort uint16
	// SkipListen starts no listener: the user must paste the code.
	SkipListen bool
	// SkipBrowser only prints the authorization URL.
	SkipBrowser bool
	// SkipPrintLoginURL does not print the URL when a browser was opened with it.
	SkipPrintLoginURL bool
	// OpenURL opens a URL in a browser; nil means OpenURL.
	OpenURL func(string) error
	// Prompter asks for a pasted code, a username or a password; nil when there is no terminal.
	Prompter Prompter
	// Username and Password, for FlowCLIPassword, spare the prompts.
	Username string
	Password string

	// SessionCache keeps sessions between logins; nil keeps none.
	SessionCache SessionCache
	// Out receives the messages for the user (the URL, prompts, issuer warnings); nil means os.Stderr.
	Out io.Writer
	// Logf receives debug messages; nil drops them.
	Logf func(format string, args ...any)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// ErrNoCredentials is wrapped by the error of a cli_password login with neither a username and
// password given nor a terminal to ask for them on.
var ErrNoCredentials = errors.New("the cli_password flow needs a username and a password, and there is no terminal to prompt for them")

// ErrStateMismatch is wrapped by the error of a login whose authorization response does not belong
// to it: a stale browser tab, another login's redirect, or a forged request.
var ErrStateMismatch = errors.New("the authorization response's state parameter does not match this login")

// ErrUpstreamUnavailable is wrapped by the error of a login whose refresh the issuer answered
// temporarily_unavailable: a Supervisor that cannot reach the upstream identity provider. A new
// login would fail the same way, so none is started and the cached session is kept.
var ErrUpstreamUnavailable = errors.New("the Supervisor could not reach the identity provider; the session is kept, try again later")

// Login returns tokens for cfg's issuer, from the session cache, a refresh or a new login. The
// returned ID token has cfg.RequestAudience as audience when one is set, else cfg.ClientID.
func Login(ctx context.Context, cfg Config) (*Token, error) {
	l, err := newLogin(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, LoginTimeout)
	defer cancel()
	tok, err := l.run(oidc.ClientContext(ctx, l.client))
	if err != nil && ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("the login timed out: %w", err)
		}
		return nil, fmt.Errorf("the login was cancelled: %w", err)
	}
	return tok, err
}

type login struct {
	cfg     Config
	scopes  []string
	client  *http.Client
	out     io.Writer
	now     func() time.Time
	openURL func(string) error
	disc    *Discovery
}

func newLogin(cfg Config) (*login, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("an issuer is required")
	}
	if err := requireHTTPS(cfg.Issuer, "the issuer"); err != nil {
		return nil, err
	}
	if cfg.ClientID == "" {
		return nil, errors.New("a client ID is required")
	}
	switch cfg.Flow {
	case "", FlowBrowserAuthcode, FlowCLIPassword:
	default:
		return nil, fmt.Errorf("unknown login flow %q: must be %s or %s", cfg.Flow, FlowBrowserAuthcode, FlowCLIPassword)
	}
	switch cfg.LoginFlow {
	case "", LoginFlowBrowser, LoginFlowDevice:
	default:
		return nil, fmt.Errorf("unknown login flow %q: must be %s or %s", cfg.LoginFlow, LoginFlowBrowser, LoginFlowDevice)
	}
	if cfg.LoginFlow == LoginFlowDevice && cfg.Flow == FlowCLIPassword {
		return nil, fmt.Errorf("the %s login flow logs in through a browser: it cannot use the upstream flow %s", LoginFlowDevice, FlowCLIPassword)
	}
	l := &login{cfg: cfg, out: cfg.Out, now: cfg.Now, openURL: cfg.OpenURL}
	l.scopes = scopesOf(cfg)
	if l.out == nil {
		l.out = os.Stderr
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.openURL == nil {
		l.openURL = OpenURL
	}
	l.client = &http.Client{}
	if cfg.HTTPClient != nil {
		*l.client = *cfg.HTTPClient
	}
	if l.client.Timeout == 0 {
		l.client.Timeout = HTTPTimeout
	}
	l.client.Transport = warningPrinter{next: l.client.Transport, out: l.out}
	return l, nil
}

func (l *login) logf(format string, args ...any) {
	if l.cfg.Logf != nil {
		l.cfg.Logf(format, args...)
	}
}

func (l *login) run(ctx context.Context) (*Token, error) {
	tok, err := l.sessionToken(ctx)
	if err != nil {
		return nil, err
	}
	l.warnIfEnding(tok)
	if !l.needsExchange(tok) {
		return tok, nil
	}
	exchanged, err := l.exchangeForAudience(ctx, tok)
	var ended *SessionEndedError
	if !errors.As(err, &ended) {
		return exchanged, err
	}
	// The cached access token outlived its session (an idle timeout, a shortened policy): the
	// session is over, as when its refresh is refused.
	l.sayEnded(ended)
	if tok, err = l.fullLogin(ctx); err != nil {
		return nil, err
	}
	l.store(l.sessionKey(), tok)
	return l.exchangeForAudience(ctx, tok)
}

// sessionToken returns the session's tokens: cached, refreshed or from a new login.
func (l *login) sessionToken(ctx context.Context) (*Token, error) {
	key := l.sessionKey()
	var cached *Token
	if l.cfg.SessionCache != nil {
		cached = l.cfg.SessionCache.GetToken(key)
	}
	if l.usable(cached) {
		l.logf("using the cached session of %s", l.cfg.Issuer)
		return cached, nil
	}
	if err := l.discover(ctx); err != nil {
		return nil, err
	}
	if cached != nil && cached.RefreshToken != nil && cached.RefreshToken.Token != "" {
		tok, err := l.refresh(ctx, cached)
		if err == nil {
			l.store(key, tok)
			return tok, nil
		}
		if errors.Is(err, ErrUpstreamUnavailable) {
			l.logf("refreshing the session failed, and so would a new login: %v", err)
			return nil, err
		}
		var ended *SessionEndedError
		if errors.As(err, &ended) {
			l.sayEnded(ended)
		}
		l.logf("refreshing the session failed, so logging in again: %v", err)
	}
	tok, err := l.fullLogin(ctx)
	if err != nil {
		return nil, err
	}
	l.store(key, tok)
	return tok, nil
}

// sessionKey names the session.
func (l *login) sessionKey() SessionKey { return SessionKeyOf(l.cfg) }

// SessionKeyOf names the session of a login with cfg in the session cache, from its issuer,
// client ID, scopes, listen port and upstream identity provider name. Its redirect URI is the one
// configured, not the listener's actual port, so that sessions survive the random port.
func SessionKeyOf(cfg Config) SessionKey {
	return SessionKey{
		Issuer:               cfg.Issuer,
		ClientID:             cfg.ClientID,
		Scopes:               scopesOf(cfg),
		RedirectURI:          (&url.URL{Scheme: "http", Host: net.JoinHostPort("localhost", strconv.Itoa(int(cfg.ListenPort))), Path: callbackPath}).String(),
		UpstreamProviderName: cfg.UpstreamIdentityProviderName,
	}
}

// scopesOf are the scopes a login with cfg requests, sorted.
func scopesOf(cfg Config) []string {
	scopes := slices.Clone(cfg.Scopes)
	if len(scopes) == 0 {
		scopes = []string{oidc.ScopeOfflineAccess, oidc.ScopeOpenID, "email", "profile"}
	}
	slices.Sort(scopes)
	return scopes
}

func (l *login) store(key SessionKey, tok *Token) {
	if l.cfg.SessionCache != nil {
		l.cfg.SessionCache.PutToken(key, tok)
	}
}

// usable reports whether cached tokens can serve without a request: an ID token valid for a
// while, or, when it is to be exchanged anyway, an access token valid long enough to do so.
func (l *login) usable(tok *Token) bool {
	if tok == nil {
		return false
	}
	if l.needsExchange(tok) {
		return tok.AccessToken.validFor(l.now(), minAccessTokenValidity)
	}
	return tok.IDToken.validFor(l.now(), minIDTokenValidity)
}

// needsExchange reports whether a token exchange must produce the ID token: one is requested for
// an audience that the session's ID token does not have.
func (l *login) needsExchange(tok *Token) bool {
	return l.cfg.RequestAudience != "" && !tok.IDToken.hasAudience(l.cfg.RequestAudience)
}

func (l *login) discover(ctx context.Context) error {
	if l.disc != nil {
		return nil
	}
	l.logf("performing OIDC discovery at %s", l.cfg.Issuer)
	disc, err := Discover(ctx, l.client, l.cfg.Issuer)
	if err != nil {
		return err
	}
	l.disc = disc
	return nil
}

func (l *login) oauth2Config(redirectURI string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: l.cfg.ClientID,
		// A public client authenticates with its client_id in the form.
		Endpoint:    oauth2.Endpoint{AuthURL: l.disc.AuthorizationEndpoint, TokenURL: l.disc.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: redirectURI,
		Scopes:      l.scopes,
	}
}

// SessionEndedError is the error of a refresh that a Supervisor refused because the session's
// policy ended it (its maximum length or idle timeout); Why is the Supervisor's reason.
type SessionEndedError struct{ Why string }

func (e *SessionEndedError) Error() string { return "the session ended: " + e.Why }

// sessionEnded is the SessionEndedError of a refusal (an OAuth error code and description) by a
// Supervisor's session policy, or nil for any other.
func sessionEnded(code, description string) *SessionEndedError {
	if _, why, ok := strings.Cut(description, "The session ended: "); ok && code == "invalid_grant" {
		return &SessionEndedError{Why: strings.TrimSuffix(why, ".")}
	}
	return nil
}

// sayEnded tells the user why a new login starts.
func (l *login) sayEnded(e *SessionEndedError) {
	fmt.Fprintf(l.out, "Your session at %s has ended: %s. Logging in again.\n", l.cfg.Issuer, e.Why)
}

// warnIfEnding tells the user, shortly before the session's end, that a login is near.
func (l *login) warnIfEnding(tok *Token) {
	if tok.RefreshToken == nil || tok.RefreshToken.SessionExpiry.IsZero() {
		return
	}
	end := tok.RefreshToken.SessionExpiry.Time
	if left := end.Sub(l.now()); left > 0 && left <= SessionEndWarning {
		fmt.Fprintf(l.out, "Your session at %s ends at %s (in %s); you will then log in again.\n",
			l.cfg.Issuer, end.Local().Format("15:04 MST"), left.Round(time.Second))
	}
}

// refresh renews the session with its refresh token. The identity must stay the same.
func (l *login) refresh(ctx context.Context, cached *Token) (*Token, error) {
	l.logf("refreshing the session with its refresh token")
	raw, err := l.oauth2Config("").TokenSource(ctx, &oauth2.Token{RefreshToken: cached.RefreshToken.Token}).Token()
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode == "temporarily_unavailable" {
		return nil, fmt.Errorf("%w (the refresh was answered: %s)", ErrUpstreamUnavailable, re.ErrorDescription)
	}
	if errors.As(err, &re) {
		if ended := sessionEnded(re.ErrorCode, re.ErrorDescription); ended != nil {
			return nil, ended
		}
	}
	if err != nil {
		return nil, describeTokenError("the refresh", err)
	}
	// A token to be exchanged needs no ID token of its own.
	tok, err := l.tokenFrom(ctx, raw, "", l.cfg.RequestAudience == "")
	if err != nil {
		return nil, err
	}
	if cached.IDToken != nil && tok.IDToken != nil && cached.IDToken.Claims["sub"] != tok.IDToken.Claims["sub"] {
		return nil, errors.New("the refreshed ID token names another subject than the session's")
	}
	if tok.RefreshToken == nil {
		tok.RefreshToken = cached.RefreshToken
	}
	return tok, nil
}

// fullLogin runs the login flow chosen by the configuration and the issuer.
func (l *login) fullLogin(ctx context.Context) (*Token, error) {
	flow := l.cfg.Flow
	a := newAuthRequest()
	var idpParams []oauth2.AuthCodeOption
	if name := l.cfg.UpstreamIdentityProviderName; name != "" {
		if !l.disc.IsSupervisor() {
			return nil, fmt.Errorf("an upstream identity provider (%q) can only be chosen at a Pinniped Supervisor, and %s is not one", name, l.cfg.Issuer)
		}
		idps, err := l.disc.IdentityProviders(ctx, l.client)
		if err != nil {
			return nil, err
		}
		idp, err := FindIdentityProvider(idps, name, l.cfg.UpstreamIdentityProviderType)
		if err != nil {
			return nil, err
		}
		switch {
		case flow == "" && len(idp.Flows) == 0:
			return nil, fmt.Errorf("the Supervisor lists no login flow for identity provider %q: choose one", name)
		case flow == "":
			flow = idp.Flows[0]
		case len(idp.Flows) > 0 && !slices.Contains(idp.Flows, flow):
			return nil, fmt.Errorf("identity provider %q supports the login flows %s, not %s", name, strings.Join(idp.Flows, ", "), flow)
		}
		idpParams = []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("pinniped_idp_name", idp.Name), oauth2.SetAuthURLParam("pinniped_idp_type", idp.Type)}
		a.params = append(a.params, idpParams...)
		if l.cfg.LoginFlow == LoginFlowDevice && !slices.Contains(idp.Flows, FlowBrowserAuthcode) {
			return nil, fmt.Errorf("identity provider %q has no browser login (%s), which the %s login flow needs", name, FlowBrowserAuthcode, LoginFlowDevice)
		}
		if l.cfg.LoginFlow == LoginFlowDevice {
			flow = FlowBrowserAuthcode
		}
	}
	if (flow == "" || flow == FlowBrowserAuthcode) && l.useDevice() {
		if l.disc.DeviceAuthorizationEndpoint == "" {
			return nil, fmt.Errorf("%s offers no device authorization endpoint for the %s login flow", l.cfg.Issuer, LoginFlowDevice)
		}
		l.logf("logging in with the %s flow", LoginFlowDevice)
		return l.deviceLogin(ctx, idpParams)
	}
	switch flow {
	case FlowCLIPassword:
		l.logf("logging in with the %s flow", FlowCLIPassword)
		return l.passwordLogin(ctx, a)
	case "", FlowBrowserAuthcode:
		l.logf("logging in with the %s flow", FlowBrowserAuthcode)
		return l.browserLogin(ctx, a)
	}
	return nil, fmt.Errorf("the Supervisor offers the login flow %q, which this client does not know", flow)
}

// useDevice reports whether a browser login goes through the device flow: when asked, or by
// default when this machine can neither open a browser nor prompt for a pasted code, the user did
// not ask only to print the URL, and the issuer offers it.
func (l *login) useDevice() bool {
	switch l.cfg.LoginFlow {
	case LoginFlowDevice:
		return true
	case LoginFlowBrowser:
		return false
	}
	// --skip-browser is left alone: its user opens the printed URL in a browser that reaches
	// this machine's listener, as with every issuer before this flow existed.
	return l.cfg.Prompter == nil && !l.cfg.SkipBrowser && !browserAvailable(os.Getenv) && l.disc.DeviceAuthorizationEndpoint != ""
}

// authRequest is the secret state of one authorization request.
type authRequest struct {
	state, nonce, verifier string
	params                 []oauth2.AuthCodeOption
}

func newAuthRequest() authRequest {
	a := authRequest{state: oauth2.GenerateVerifier(), nonce: oauth2.GenerateVerifier(), verifier: oauth2.GenerateVerifier()}
	a.params = []oauth2.AuthCodeOption{oidc.Nonce(a.nonce), oauth2.S256ChallengeOption(a.verifier)}
	return a
}

// complete checks an authorization response and redeems its code. checkState is false only for a
// bare pasted code, which carries no state.
func (l *login) complete(ctx context.Context, a authRequest, redirectURI string, params url.Values, checkState bool) (*Token, error) {
	if checkState && params.Get("state") != a.state {
		return nil, ErrStateMismatch
	}
	if code := params.Get("error"); code != "" {
		if desc := params.Get("error_description"); desc != "" {
			return nil, fmt.Errorf("the issuer refused the login: %s: %s", code, desc)
		}
		return nil, fmt.Errorf("the issuer refused the login: %s", code)
	}
	code := params.Get("code")
	if code == "" {
		return nil, errors.New("the authorization response carries no code")
	}
	raw, err := l.oauth2Config(redirectURI).Exchange(ctx, code, oauth2.VerifierOption(a.verifier))
	if err != nil {
		return nil, describeTokenError("redeeming the authorization code", err)
	}
	return l.tokenFrom(ctx, raw, a.nonce, true)
}

// tokenFrom verifies a token response. The nonce is checked when not empty.
func (l *login) tokenFrom(ctx context.Context, raw *oauth2.Token, nonce string, requireIDToken bool) (*Token, error) {
	tok := &Token{}
	if raw.AccessToken != "" {
		tok.AccessToken = &AccessToken{Token: raw.AccessToken, Type: raw.TokenType, Expiry: metaTime(raw.Expiry)}
	}
	if raw.RefreshToken != "" {
		tok.RefreshToken = &RefreshToken{Token: raw.RefreshToken, SessionExpiry: l.sessionExpiry(raw)}
	}
	rawID, _ := raw.Extra("id_token").(string)
	if rawID == "" {
		if requireIDToken {
			return nil, errors.New("the issuer's token response has no ID token (is the openid scope requested?)")
		}
		return tok, nil
	}
	id, err := l.verify(ctx, rawID, nonce, l.cfg.ClientID)
	if err != nil {
		return nil, err
	}
	tok.IDToken = id
	return tok, nil
}

// sessionExpiry is when the token response says the session ends (session_expires_in, a number
// of seconds), or zero when it does not say.
func (l *login) sessionExpiry(raw *oauth2.Token) metav1.Time {
	var seconds float64
	switch v := raw.Extra("session_expires_in").(type) {
	case float64:
		seconds = v
	case string:
		seconds, _ = strconv.ParseFloat(v, 64)
	}
	if seconds <= 0 {
		return metav1.Time{}
	}
	return metaTime(l.now().Add(time.Duration(seconds) * time.Second).Truncate(time.Second))
}

// verify checks an ID token's signature, issuer, audience and expiry, and its nonce when not empty.
func (l *login) verify(ctx context.Context, raw, nonce, audience string) (*IDToken, error) {
	idt, err := l.disc.provider.Verifier(&oidc.Config{ClientID: audience, Now: l.now}).Verify(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("the issuer's ID token is not valid: %w", err)
	}
	if nonce != "" && idt.Nonce != nonce {
		return nil, errors.New("the ID token's nonce does not match this login")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, fmt.Errorf("decoding the ID token's claims: %w", err)
	}
	return &IDToken{Token: raw, Expiry: metaTime(idt.Expiry), Claims: claims}, nil
}

// describeTokenError turns a token endpoint failure into a message without the request's secrets.
func describeTokenError(what string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		switch {
		case re.ErrorCode != "" && re.ErrorDescription != "":
			return fmt.Errorf("%s failed: the issuer answered %s: %s", what, re.ErrorCode, re.ErrorDescription)
		case re.ErrorCode != "":
			return fmt.Errorf("%s failed: the issuer answered %s", what, re.ErrorCode)
		case re.Response != nil:
			return fmt.Errorf("%s failed: the issuer's token endpoint answered %s", what, re.Response.Status)
		}
	}
	return explainRequestError(what, err)
}
