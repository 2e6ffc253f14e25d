package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
)

// upstreamPassword is the user's password for the fakeUpstream's password grant.
const upstreamPassword = "upstream-password"

// fakeUpstream is a minimal OIDC issuer: its authorize endpoint logs the user in at once, its
// token endpoint checks PKCE, grants tokens for the user's password and serves refreshes until
// told to refuse them.
type fakeUpstream struct {
	t      testing.TB
	server *httptest.Server
	key    *ecdsa.PrivateKey

	mu sync.Mutex
	// codes maps an issued code to its authorize request.
	codes map[string]url.Values
	// lastAuthorize is the last authorize request's query.
	lastAuthorize url.Values
	// refreshTokens are the refresh tokens still valid.
	refreshTokens map[string]bool
	email         string
	groups        []string
	refuseRefresh bool
	// down makes client() refuse every connection, as an upstream that is down.
	down      bool
	refreshes int
	// revoked are the tokens revoked at the revocation endpoint, which answers 503 while
	// refuseRevocation is set.
	revoked          []string
	refuseRevocation bool
}

func newFakeUpstream(t testing.TB) *fakeUpstream {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u := &fakeUpstream{t: t, key: key, codes: map[string]url.Values{}, refreshTokens: map[string]bool{},
		email: "pinny@example.com", groups: []string{"seals", "walruses"}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"issuer":                                u.server.URL,
			"authorization_endpoint":                u.server.URL + "/authorize",
			"token_endpoint":                        u.server.URL + "/token",
			"jwks_uri":                              u.server.URL + "/jwks",
			"revocation_endpoint":                   u.server.URL + "/revoke",
			"id_token_signing_alg_values_supported": []string{"ES256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "ES256", Use: "sig"}}})
	})
	mux.HandleFunc("GET /authorize", u.authorize)
	mux.HandleFunc("POST /token", u.token)
	mux.HandleFunc("POST /revoke", u.revoke)
	u.server = httptest.NewTLSServer(mux)
	t.Cleanup(u.server.Close)
	return u
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (u *fakeUpstream) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != "upstream-client" || q.Get("code_challenge_method") != "S256" || q.Get("nonce") == "" {
		http.Error(w, "bad authorize request: "+q.Encode(), http.StatusBadRequest)
		return
	}
	code := rand.Text()
	u.mu.Lock()
	u.codes[code] = q
	u.lastAuthorize = q
	u.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	back.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (u *fakeUpstream) token(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if id, secret, _ := r.BasicAuth(); id != "upstream-client" || secret != "upstream-secret" {
		http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
		return
	}
	nonce := ""
	switch r.PostFormValue("grant_type") {
	case "authorization_code":
		q, ok := u.codes[r.PostFormValue("code")]
		delete(u.codes, r.PostFormValue("code"))
		sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != q.Get("code_challenge") || r.PostFormValue("redirect_uri") != q.Get("redirect_uri") {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		nonce = q.Get("nonce")
	case "refresh_token":
		u.refreshes++
		if u.refuseRefresh || !u.refreshTokens[r.PostFormValue("refresh_token")] {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		delete(u.refreshTokens, r.PostFormValue("refresh_token"))
	case "password":
		if r.PostFormValue("username") != u.email || r.PostFormValue("password") != upstreamPassword {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
	default:
		http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
		return
	}
	now := time.Now()
	claims := map[string]any{
		"iss": u.server.URL, "sub": "upstream-subject", "aud": "upstream-client",
		"iat": now.Unix(), "exp": now.Add(time.Minute).Unix(),
		"email": u.email, "email_verified": true, "groups": u.groups,
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: u.key, KeyID: "k"}}, nil)
	if err != nil {
		u.t.Error(err)
		return
	}
	idToken, err := josejwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		u.t.Error(err)
		return
	}
	refresh := rand.Text()
	u.refreshTokens[refresh] = true
	writeJSON(w, map[string]any{
		"access_token": rand.Text(), "token_type": "Bearer", "expires_in": 60,
		"refresh_token": refresh, "id_token": idToken,
	})
}

// revoke is an RFC 7009 revocation endpoint for refresh tokens.
func (u *fakeUpstream) revoke(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if id, secret, _ := r.BasicAuth(); id != "upstream-client" || secret != "upstream-secret" {
		http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
		return
	}
	if u.refuseRevocation {
		http.Error(w, `{"error":"temporarily_unavailable"}`, http.StatusServiceUnavailable)
		return
	}
	if r.PostFormValue("token_type_hint") != "refresh_token" {
		http.Error(w, `{"error":"unsupported_token_type"}`, http.StatusBadRequest)
		return
	}
	u.revoked = append(u.revoked, r.PostFormValue("token"))
	delete(u.refreshTokens, r.PostFormValue("token"))
}

// client is the connector's HTTP client of the upstream: it trusts the upstream's certificate, and
// its connections are refused while the upstream is down.
func (u *fakeUpstream) client() *http.Client {
	c := *u.server.Client()
	c.Transport = refusingTransport{u: u, next: c.Transport}
	return &c
}

type refusingTransport struct {
	u    *fakeUpstream
	next http.RoundTripper
}

func (t refusingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.u.mu.Lock()
	down := t.u.down
	t.u.mu.Unlock()
	if down {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	return t.next.RoundTrip(r)
}
