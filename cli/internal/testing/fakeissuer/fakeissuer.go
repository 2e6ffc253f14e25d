// Package fakeissuer is an OpenID Connect issuer double for the CLI's tests, which can pose as a
// Pinniped Supervisor: discovery (with response_mode=form_post and the Supervisor's identity
// provider discovery when asked), JWKS, an authorization endpoint that logs one user in at once
// (or checks the cli_password flow's headers), a device authorization endpoint when asked, and a
// token endpoint for the authorization code (with PKCE), refresh token, RFC 8693 token exchange
// and RFC 8628 device code grants. It also plays the browser.
package fakeissuer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// The identity the issuer logs in.
const (
	Subject  = "fake-subject"
	Username = "pinny"
	Password = "fake-password"
	Email    = "pinny@example.com"
)

// Groups are the user's groups.
var Groups = []string{"seals", "walruses"}

// Options shape the issuer.
type Options struct {
	// Supervisor adds the Supervisor's discovery member and identity provider discovery.
	Supervisor bool
	// IdentityProviders are listed by identity provider discovery.
	IdentityProviders []IdentityProvider
	// FormPost lists form_post in response_modes_supported.
	FormPost bool
	// IDTokenLifetime defaults to an hour.
	IDTokenLifetime time.Duration
	// Warnings are sent as Warning headers on token responses.
	Warnings []string
	// Device serves the device authorization grant. DevicePolls are the errors its polls get,
	// in order (authorization_pending, access_denied, ...); the polls after them get tokens.
	Device      bool
	DevicePolls []string
	// SessionLength, when set, bounds sessions as a Supervisor's session policy does: token
	// responses with a refresh token say session_expires_in, and a refresh after the session's
	// end is refused as the Supervisor refuses it.
	SessionLength time.Duration
	// Revocation serves a token revocation endpoint (RFC 7009), as our Supervisor does: a revoked
	// refresh token ends its session.
	Revocation bool
}

// The device authorization's answer.
const (
	DeviceCode      = "fake-device-code"
	UserCode        = "BCDF-GHJK"
	VerificationURI = "/device"
)

// IdentityProvider is an entry of identity provider discovery.
type IdentityProvider struct {
	Name  string   `json:"name"`
	Type  string   `json:"type"`
	Flows []string `json:"flows"`
}

// Issuer is a running double.
type Issuer struct {
	URL      string
	CABundle []byte

	opts   Options
	server *httptest.Server
	signer jose.Signer
	jwks   jose.JSONWebKeySet

	mu    sync.Mutex
	codes map[string]grant
	// accessTokens are the issued access tokens, with their expiry and when their session started.
	accessTokens map[string]accessToken
	// refreshTokens are the valid refresh tokens, with when their session started.
	refreshTokens  map[string]time.Time
	authorizations []url.Values
	devicePolls    []string
	counts         Counts
	upstreamDown   bool
}

// Counts says how often each grant was served.
type Counts struct {
	Authorizations, CodeExchanges, Refreshes, TokenExchanges, DevicePolls, Revocations int
}

type grant struct {
	clientID, redirectURI, challenge, nonce string
	scopes                                  []string
}

// New starts the issuer; it stops when the test ends.
func New(t testing.TB, opts Options) *Issuer {
	t.Helper()
	if opts.IDTokenLifetime == 0 {
		opts.IDTokenLifetime = time.Hour
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk := jose.JSONWebKey{Key: key, KeyID: "fake-key", Algorithm: string(jose.ES256), Use: "sig"}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jwk}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	i := &Issuer{
		opts: opts, signer: signer, jwks: jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk.Public()}},
		codes: map[string]grant{}, accessTokens: map[string]accessToken{}, refreshTokens: map[string]time.Time{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", i.discovery)
	mux.HandleFunc("GET /jwks.json", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, i.jwks) })
	mux.HandleFunc("GET /v1alpha1/pinniped_identity_providers", i.identityProviders)
	mux.HandleFunc("GET /oauth2/authorize", i.authorize)
	mux.HandleFunc("POST /oauth2/token", i.token)
	if opts.Revocation {
		mux.HandleFunc("POST /oauth2/revoke", i.revoke)
	}
	if opts.Device {
		mux.HandleFunc("POST /oauth2/device_authorization", i.deviceAuthorization)
		i.devicePolls = slices.Clone(opts.DevicePolls)
	}
	i.server = httptest.NewTLSServer(mux)
	t.Cleanup(i.server.Close)
	i.URL = i.server.URL
	i.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: i.server.Certificate().Raw})
	return i
}

// Client trusts the issuer.
func (i *Issuer) Client() *http.Client {
	c := *i.server.Client()
	return &c
}

// Counts returns how often each grant was served.
func (i *Issuer) Counts() Counts {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.counts
}

// Authorizations returns the query of every authorization request.
func (i *Issuer) Authorizations() []url.Values {
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.Clone(i.authorizations)
}

// SetUpstreamDown makes refreshes answer temporarily_unavailable, as the Supervisor does while
// it cannot reach the upstream identity provider; the refresh token stays valid.
func (i *Issuer) SetUpstreamDown(down bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.upstreamDown = down
}

// EndSessions forgets every token issued, as a Supervisor does when an administrator revokes
// every session: they are unknown from then on.
func (i *Issuer) EndSessions() {
	i.mu.Lock()
	defer i.mu.Unlock()
	clear(i.accessTokens)
	clear(i.refreshTokens)
}

// Close stops the issuer, so that later requests fail to connect.
func (i *Issuer) Close() { i.server.Close() }

func (i *Issuer) discovery(w http.ResponseWriter, _ *http.Request) {
	doc := map[string]any{
		"issuer":                                i.URL,
		"authorization_endpoint":                i.URL + "/oauth2/authorize",
		"token_endpoint":                        i.URL + "/oauth2/token",
		"jwks_uri":                              i.URL + "/jwks.json",
		"response_types_supported":              []string{"code"},
		"response_modes_supported":              []string{"query"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"scopes_supported":                      []string{"openid", "offline_access", "email", "profile", "groups"},
	}
	if i.opts.Device {
		doc["device_authorization_endpoint"] = i.URL + "/oauth2/device_authorization"
	}
	if i.opts.Revocation {
		doc["revocation_endpoint"] = i.URL + "/oauth2/revoke"
	}
	if i.opts.FormPost {
		doc["response_modes_supported"] = []string{"query", "form_post"}
	}
	if i.opts.Supervisor {
		doc["scopes_supported"] = []string{"openid", "offline_access", "pinniped:request-audience", "username", "groups"}
		doc["discovery.supervisor.pinniped.dev/v1alpha1"] = map[string]string{
			"pinniped_identity_providers_endpoint": i.URL + "/v1alpha1/pinniped_identity_providers",
		}
	}
	writeJSON(w, http.StatusOK, doc)
}

func (i *Issuer) identityProviders(w http.ResponseWriter, _ *http.Request) {
	if !i.opts.Supervisor {
		http.NotFound(w, nil)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"pinniped_identity_providers": i.opts.IdentityProviders})
}

// authorize logs the user in at once: the browser flow needs no form, the cli_password flow
// checks the headers.
func (i *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	i.mu.Lock()
	i.counts.Authorizations++
	i.authorizations = append(i.authorizations, q)
	i.mu.Unlock()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme != "http" || redirect.Hostname() != "127.0.0.1" || redirect.Path != "/callback" {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	answer := url.Values{"state": {q.Get("state")}}
	if username, password := r.Header.Get("Pinniped-Username"), r.Header.Get("Pinniped-Password"); username != "" || password != "" {
		if username != Username || password != Password {
			answer.Set("error", "access_denied")
			answer.Set("error_description", "Incorrect username or password.")
			redirect.RawQuery = answer.Encode()
			http.Redirect(w, r, redirect.String(), http.StatusFound)
			return
		}
	}
	code := random()
	i.mu.Lock()
	i.codes[code] = grant{clientID: q.Get("client_id"), redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		nonce: q.Get("nonce"), scopes: strings.Fields(q.Get("scope"))}
	i.mu.Unlock()
	answer.Set("code", code)
	if q.Get("response_mode") == "form_post" {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form method="post" action="%s"><input name="code" value="%s"><input name="state" value="%s"></form>`,
			html.EscapeString(redirect.String()), html.EscapeString(code), html.EscapeString(q.Get("state")))
		return
	}
	redirect.RawQuery = answer.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (i *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, "invalid_request", err.Error())
		return
	}
	for _, warning := range i.opts.Warnings {
		w.Header().Add("Warning", fmt.Sprintf("299 - %q", warning))
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		i.redeemCode(w, r.PostForm)
	case "refresh_token":
		i.refresh(w, r.PostForm)
	case "urn:ietf:params:oauth:grant-type:token-exchange":
		i.exchange(w, r.PostForm)
	case "urn:ietf:params:oauth:grant-type:device_code":
		i.pollDevice(w, r.PostForm)
	default:
		oauthError(w, "unsupported_grant_type", "")
	}
}

func (i *Issuer) redeemCode(w http.ResponseWriter, form url.Values) {
	i.mu.Lock()
	g, ok := i.codes[form.Get("code")]
	delete(i.codes, form.Get("code"))
	i.counts.CodeExchanges++
	i.mu.Unlock()
	sum := sha256.Sum256([]byte(form.Get("code_verifier")))
	switch {
	case !ok:
		oauthError(w, "invalid_grant", "unknown or used authorization code")
	case g.clientID != form.Get("client_id") || g.redirectURI != form.Get("redirect_uri"):
		oauthError(w, "invalid_grant", "client or redirect URI differ from the authorization request")
	case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
		oauthError(w, "invalid_grant", "PKCE verifier does not match the challenge")
	default:
		i.issue(w, g.clientID, g.nonce, slices.Contains(g.scopes, "offline_access"))
	}
}

// deviceAuthorization answers with the fixed codes, polled every second, and keeps the request
// among the authorizations.
func (i *Issuer) deviceAuthorization(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, "invalid_request", err.Error())
		return
	}
	i.mu.Lock()
	i.authorizations = append(i.authorizations, r.PostForm)
	i.counts.Authorizations++
	i.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"device_code": DeviceCode, "user_code": UserCode,
		"verification_uri": i.URL + VerificationURI, "verification_uri_complete": i.URL + VerificationURI + "?user_code=" + UserCode,
		"expires_in": 600, "interval": 1})
}

// pollDevice answers a poll with the next of Options.DevicePolls, then with tokens.
func (i *Issuer) pollDevice(w http.ResponseWriter, form url.Values) {
	i.mu.Lock()
	i.counts.DevicePolls++
	var answer string
	if len(i.devicePolls) > 0 {
		answer, i.devicePolls = i.devicePolls[0], i.devicePolls[1:]
	}
	i.mu.Unlock()
	switch {
	case form.Get("device_code") != DeviceCode:
		oauthError(w, "invalid_grant", "unknown device code")
	case answer != "":
		oauthError(w, answer, "")
	default:
		i.issue(w, form.Get("client_id"), "", true)
	}
}

func (i *Issuer) refresh(w http.ResponseWriter, form url.Values) {
	rt := form.Get("refresh_token")
	i.mu.Lock()
	i.counts.Refreshes++
	if i.upstreamDown {
		i.mu.Unlock()
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "temporarily_unavailable",
			"error_description": "The identity provider 'my-ldap' is unreachable; try again later."})
		return
	}
	login, ok := i.refreshTokens[rt]
	delete(i.refreshTokens, rt) // rotated
	i.mu.Unlock()
	switch {
	case !ok:
		oauthError(w, "invalid_grant", "unknown refresh token")
	case i.sessionOver(login):
		i.sessionEnded(w)
	default:
		i.issueFor(w, form.Get("client_id"), "", true, login)
	}
}

// RefusedAudiencePrefix starts the audiences whose token exchanges the issuer refuses.
const RefusedAudiencePrefix = "refused-"

func (i *Issuer) exchange(w http.ResponseWriter, form url.Values) {
	i.mu.Lock()
	access, ok := i.accessTokens[form.Get("subject_token")]
	i.counts.TokenExchanges++
	i.mu.Unlock()
	switch {
	case !ok || time.Now().After(access.expiry):
		// As a Supervisor answers an access token it does not have.
		oauthError(w, "request_unauthorized", "The request could not be authorized. Invalid 'subject_token' parameter value.")
	case i.sessionOver(access.login):
		i.sessionEnded(w)
	case strings.HasPrefix(form.Get("audience"), RefusedAudiencePrefix):
		oauthError(w, "access_denied", "The audience is not allowed.")
	case form.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:access_token" ||
		form.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:jwt" || form.Get("audience") == "":
		oauthError(w, "invalid_request", "bad token exchange parameters")
	default:
		idToken, err := i.idToken(form.Get("audience"), "")
		if err != nil {
			oauthError(w, "server_error", err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"access_token": idToken, "issued_token_type": "urn:ietf:params:oauth:token-type:jwt",
			"token_type": "N_A", "expires_in": int(i.opts.IDTokenLifetime.Seconds())})
	}
}

type accessToken struct{ expiry, login time.Time }

// sessionOver reports whether the session that started at login reached Options.SessionLength.
func (i *Issuer) sessionOver(login time.Time) bool {
	return i.opts.SessionLength > 0 && !time.Now().Before(login.Add(i.opts.SessionLength))
}

// sessionEnded answers as a Supervisor refuses a refresh or an exchange of an ended session.
func (i *Issuer) sessionEnded(w http.ResponseWriter) {
	oauthError(w, "invalid_grant", "The provided authorization grant (e.g., authorization code, resource owner credentials) or refresh token is invalid, expired, revoked, "+
		"does not match the redirection URI used in the authorization request, or was issued to another client. The session ended: the session reached its maximum length of "+
		i.opts.SessionLength.String()+".")
}

// revoke ends the session of a refresh token; other tokens are answered as revoked, as RFC 7009
// asks. (This double keeps no link from an access token to its session.)
func (i *Issuer) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("client_id") == "" || r.PostForm.Get("token") == "" {
		oauthError(w, "invalid_request", "client_id and token are required")
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.counts.Revocations++
	delete(i.refreshTokens, r.PostForm.Get("token"))
	w.WriteHeader(http.StatusOK)
}

// issue answers a login's token request.
func (i *Issuer) issue(w http.ResponseWriter, clientID, nonce string, withRefresh bool) {
	i.issueFor(w, clientID, nonce, withRefresh, time.Now())
}

// issueFor answers a token request of the session that started at login.
func (i *Issuer) issueFor(w http.ResponseWriter, clientID, nonce string, withRefresh bool, login time.Time) {
	idToken, err := i.idToken(clientID, nonce)
	if err != nil {
		oauthError(w, "server_error", err.Error())
		return
	}
	access := random()
	resp := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 120, "id_token": idToken}
	i.mu.Lock()
	i.accessTokens[access] = accessToken{expiry: time.Now().Add(2 * time.Minute), login: login}
	if withRefresh {
		rt := random()
		i.refreshTokens[rt] = login
		resp["refresh_token"] = rt
		if i.opts.SessionLength > 0 {
			resp["session_expires_in"] = int(time.Until(login.Add(i.opts.SessionLength)).Seconds())
		}
	}
	i.mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}

// idToken signs an ID token for the user.
func (i *Issuer) idToken(audience, nonce string) (string, error) {
	now := time.Now()
	claims := map[string]any{"iss": i.URL, "sub": Subject, "aud": audience, "iat": now.Unix(), "exp": now.Add(i.opts.IDTokenLifetime).Unix(),
		"username": Username, "email": Email, "groups": Groups}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	return jwt.Signed(i.signer).Claims(claims).Serialize()
}

// Browse plays the user's browser at authURL: it follows the issuer's redirect to the CLI's
// listener, or posts its form_post page there from the issuer's origin, and returns the
// listener's answer.
func (i *Issuer) Browse(authURL string) (int, string, error) {
	client := i.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Get(authURL)
	if err != nil {
		return 0, "", err
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var callback *http.Request
	switch {
	case resp.StatusCode == http.StatusFound:
		callback, err = http.NewRequest(http.MethodGet, resp.Header.Get("Location"), nil)
	case resp.StatusCode == http.StatusOK && strings.Contains(string(body), `method="post"`):
		u, _ := url.Parse(authURL)
		q := u.Query()
		form := url.Values{"code": {formValue(string(body), "code")}, "state": {q.Get("state")}}
		callback, err = http.NewRequest(http.MethodPost, q.Get("redirect_uri"), strings.NewReader(form.Encode()))
		if err == nil {
			callback.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			callback.Header.Set("Origin", i.URL)
		}
	default:
		return 0, "", fmt.Errorf("the authorization endpoint answered %s: %s", resp.Status, body)
	}
	if err != nil {
		return 0, "", err
	}
	answer, err := http.DefaultClient.Do(callback)
	if err != nil {
		return 0, "", err
	}
	defer answer.Body.Close()
	text, _ := io.ReadAll(answer.Body)
	return answer.StatusCode, string(text), nil
}

func formValue(page, name string) string {
	_, rest, _ := strings.Cut(page, `name="`+name+`" value="`)
	value, _, _ := strings.Cut(rest, `"`)
	return html.UnescapeString(value)
}

func oauthError(w http.ResponseWriter, code, description string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": description})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func random() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
