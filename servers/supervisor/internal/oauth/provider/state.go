package provider

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ory/fosite"

	"sealion.dev/servers/supervisor/internal/issuer"
)

// stateVersion is bumped whenever UpstreamState changes incompatibly.
const stateVersion = "2"

// csrfCookie binds the upstream state to the browser that started the login.
const csrfCookie = "__Host-pinniped-csrf-v2"

// csrfCookieLifetime is how long the browser keeps the CSRF cookie.
const csrfCookieLifetime = 7 * 24 * time.Hour

// UpstreamState is the state parameter sent to the upstream identity provider: everything the
// callback needs to finish the downstream authorize request, so nothing is stored until a user
// has logged in.
type UpstreamState struct {
	Version string `json:"v"`
	// Params are the downstream authorize request's parameters, URL-encoded.
	Params string `json:"p"`
	// IDP is the display name of the chosen identity provider.
	IDP string `json:"i"`
	// Nonce and PKCEVerifier secure the upstream leg of the login.
	Nonce        string    `json:"n"`
	PKCEVerifier string    `json:"k"`
	CSRF         string    `json:"c"`
	IssuedAt     time.Time `json:"t"`
}

// stateCodec seals states with AES-256-GCM, so that they are both secret and tamper-proof.
type stateCodec struct{ key []byte }

func (c *stateCodec) aead() (cipher.AEAD, error) {
	block, err := aes.NewCipher(c.key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func (c *stateCodec) encode(s UpstreamState) (string, error) {
	return c.seal(stateVersion, s)
}

func (c *stateCodec) decode(encoded string, now time.Time) (*UpstreamState, error) {
	var s UpstreamState
	if err := c.open(stateVersion, encoded, &s); err != nil {
		return nil, err
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("state parameter has version %q, want %q", s.Version, stateVersion)
	}
	if now.After(s.IssuedAt.Add(StateLifetime)) {
		return nil, errors.New("state parameter has expired: start the login again")
	}
	return &s, nil
}

// seal encrypts v's JSON, authenticated with aad, which says what the sealed value is for: a
// value sealed for one use does not open for another.
func (c *stateCodec) seal(aad string, v any) (string, error) {
	aead, err := c.aead()
	if err != nil {
		return "", err
	}
	plain, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte(aad))), nil
}

// open decrypts what seal sealed with aad into v.
func (c *stateCodec) open(aad, encoded string, v any) error {
	aead, err := c.aead()
	if err != nil {
		return err
	}
	sealed, err := base64.RawURLEncoding.DecodeString(encoded)
	if err != nil || len(sealed) < aead.NonceSize() {
		return errors.New("malformed state parameter")
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(aad))
	if err != nil {
		return errors.New("state parameter was not issued by this issuer")
	}
	if err := json.Unmarshal(plain, v); err != nil {
		return fmt.Errorf("decoding state parameter: %w", err)
	}
	return nil
}

// randomString returns n random bytes, base64url-encoded.
func randomString(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// signCSRF returns the CSRF cookie's value for csrf: csrf and its HMAC under the Supervisor's
// CSRF key, so that only a cookie the Supervisor set is accepted, whichever issuer set it.
func (p *Provider) signCSRF(csrf string) string {
	mac := hmac.New(sha256.New, p.Issuer.CSRFKey)
	mac.Write([]byte(csrf))
	return csrf + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// csrfFromCookie returns the CSRF value of the request's cookie, or "" when it has none or one
// the Supervisor did not sign (such as one signed with a CSRF key since replaced).
func (p *Provider) csrfFromCookie(r *http.Request) string {
	c, err := r.Cookie(csrfCookie)
	if err != nil {
		return ""
	}
	csrf, _, ok := strings.Cut(c.Value, ".")
	if !ok || csrf == "" || !hmac.Equal([]byte(p.signCSRF(csrf)), []byte(c.Value)) {
		return ""
	}
	return csrf
}

// NewState starts the upstream state of a browser login, binds it to the browser with the CSRF
// cookie (whose value is kept when the browser has a valid one), and returns it with its sealed
// form.
func (p *Provider) NewState(w http.ResponseWriter, r *http.Request, form url.Values, idp *issuer.IdentityProvider) (*UpstreamState, string, error) {
	csrf := p.csrfFromCookie(r)
	st := &UpstreamState{Version: stateVersion, Params: form.Encode(), IDP: idp.DisplayName, IssuedAt: p.Now().UTC()}
	for _, s := range []*string{&st.Nonce, &st.PKCEVerifier, &csrf} {
		if *s == "" {
			var err error
			if *s, err = randomString(32); err != nil {
				return nil, "", err
			}
		}
	}
	st.CSRF = csrf
	http.SetCookie(w, &http.Cookie{
		Name: csrfCookie, Value: p.signCSRF(csrf), Path: "/", Secure: true, HttpOnly: true,
		SameSite: http.SameSiteNoneMode, MaxAge: int(csrfCookieLifetime.Seconds()),
	})
	sealed, err := p.state.encode(*st)
	if err != nil {
		return nil, "", err
	}
	return st, sealed, nil
}

// ResumeState reads the sealed state of a browser login, checks that this browser started it,
// and replays the downstream authorize request it carries. On failure it has answered.
func (p *Provider) ResumeState(w http.ResponseWriter, r *http.Request, encoded string) (*UpstreamState, fosite.AuthorizeRequester, bool) {
	ctx := r.Context()
	st, err := p.state.decode(encoded, p.Now())
	if err != nil {
		http.Error(w, "bad state: "+err.Error(), http.StatusBadRequest)
		return nil, nil, false
	}
	if csrf := p.csrfFromCookie(r); csrf == "" || subtle.ConstantTimeCompare([]byte(csrf), []byte(st.CSRF)) != 1 {
		http.Error(w, "CSRF cookie is missing or does not match the state: start the login again in the same browser", http.StatusForbidden)
		return nil, nil, false
	}
	// fosite validates the request again, as it would have changed meaning if the client's
	// registration had.
	down := r.Clone(ctx)
	down.Method = http.MethodGet
	down.URL = &url.URL{Path: p.Issuer.Path(AuthorizePath), RawQuery: st.Params}
	down.Form, down.PostForm, down.Body = nil, nil, http.NoBody
	ar, err := p.OAuth.NewAuthorizeRequest(ctx, down)
	if err != nil {
		p.AuthorizeError(ctx, w, ar, err, false)
		return nil, nil, false
	}
	return st, ar, true
}
