// Package device holds what the device authorization grant (RFC 8628) adds to an issuer's OAuth
// state: the user code a person types on the verification page, the device code a client polls
// with, and the answer each poll gets while the person logs in. The endpoints that use them
// (device authorization, the verification page, the token endpoint's grant) live in the oauth
// packages; nothing here talks to storage or to HTTP.
package device

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/ory/fosite"
)

// GrantType is the device code grant's grant_type at the token endpoint.
const GrantType = "urn:ietf:params:oauth:grant-type:device_code"

// User codes: RFC 8628 section 6.1's base-20 alphabet of consonants, which has no vowels (no
// words) and no digits (no 0/O or 1/I to confuse); eight of them, shown as two groups of four.
const (
	userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"
	UserCodeLength   = 8
)

// UserCodeBits is the entropy of a user code: 8 * log2(20), about 34.6 bits. With attempts
// limited per code and per source, a code alive for Lifetime cannot be guessed in practice.
var UserCodeBits = UserCodeLength * math.Log2(float64(len(userCodeAlphabet)))

// Lifetime is how long a device code and its user code may be used, and Interval how long a
// client waits between polls unless told to slow down.
const (
	Lifetime = 10 * time.Minute
	Interval = 5 * time.Second
	// slowDownStep is what each slow_down adds to the interval (RFC 8628 section 3.5).
	slowDownStep = 5 * time.Second
)

// NewUserCode draws a user code from random, uniformly: bytes that would favour the alphabet's
// first letters (256 is not a multiple of 20) are drawn again.
func NewUserCode(random io.Reader) (string, error) {
	limit := byte(256 - 256%len(userCodeAlphabet))
	code := make([]byte, 0, UserCodeLength)
	buf := make([]byte, UserCodeLength)
	for len(code) < UserCodeLength {
		if _, err := io.ReadFull(random, buf); err != nil {
			return "", fmt.Errorf("drawing a user code: %w", err)
		}
		for _, b := range buf {
			if b < limit && len(code) < UserCodeLength {
				code = append(code, userCodeAlphabet[int(b)%len(userCodeAlphabet)])
			}
		}
	}
	return string(code), nil
}

// FormatUserCode shows a user code as people read it: "BCDF-GHJK".
func FormatUserCode(code string) string {
	if len(code) != UserCodeLength {
		return code
	}
	return code[:UserCodeLength/2] + "-" + code[UserCodeLength/2:]
}

// NormalizeUserCode turns what a person typed into a user code: letters in any case, with or
// without the dash, spaces anywhere. It reports false for anything that cannot be one, which
// the verification page refuses without a lookup.
func NormalizeUserCode(typed string) (string, bool) {
	code := strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == ' ' || r == '\t':
			return -1
		case 'a' <= r && r <= 'z':
			return r - 'a' + 'A'
		}
		return r
	}, typed)
	if len(code) != UserCodeLength {
		return "", false
	}
	for _, r := range code {
		if !strings.ContainsRune(userCodeAlphabet, r) {
			return "", false
		}
	}
	return code, true
}

// NewDeviceCode draws a device code: 32 random bytes, unpadded base64url. It is stored only as
// its HMAC, as the issuer's other tokens are.
func NewDeviceCode() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("drawing a device code: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// State is where a device authorization stands.
type State string

const (
	// Pending: the person has not finished logging in on the verification page.
	Pending State = "pending"
	// Approved: the person logged in and approved; the next poll gets the tokens.
	Approved State = "approved"
	// Denied: the person refused the request on the verification page.
	Denied State = "denied"
	// Redeemed: a poll got the tokens; the device code is spent.
	Redeemed State = "redeemed"
)

// Authorization is one device authorization request's polling state.
type Authorization struct {
	State     State     `json:"state"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Interval is the least time between two polls, grown by each slow_down.
	Interval time.Duration `json:"interval"`
	// LastPoll is when the client last polled; zero before its first poll.
	LastPoll time.Time `json:"lastPoll"`
}

// NewAuthorization is a pending authorization that expires Lifetime after now.
func NewAuthorization(now time.Time) Authorization {
	return Authorization{State: Pending, ExpiresAt: now.Add(Lifetime), Interval: Interval}
}

// The kinds of code Signature signs.
const (
	KindDeviceCode = "device_code"
	KindUserCode   = "user_code"
)

// Signature is the HMAC-SHA256 of a device or user code under the issuer's token key, which
// names and finds its stored record: the codes themselves are never stored. The two kinds of
// code are signed apart (kind), so that neither can stand for the other.
func Signature(key []byte, kind, code string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(kind + "\x00" + code))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// RFC 8628 section 3.5's answers to a poll that gets no tokens.
var (
	ErrAuthorizationPending = &fosite.RFC6749Error{ErrorField: "authorization_pending", CodeField: http.StatusBadRequest,
		DescriptionField: "The authorization request is still pending as the end user hasn't yet completed the user-interaction steps."}
	ErrSlowDown = &fosite.RFC6749Error{ErrorField: "slow_down", CodeField: http.StatusBadRequest,
		DescriptionField: "The authorization request is still pending and polling should continue, but the interval must be increased."}
	ErrExpiredToken = &fosite.RFC6749Error{ErrorField: "expired_token", CodeField: http.StatusBadRequest,
		DescriptionField: "The device_code has expired, and the device authorization session has concluded."}
	// ErrAccessDenied is 400, as every token endpoint error (RFC 6749 section 5.2), where
	// fosite's is the authorize endpoint's 403.
	ErrAccessDenied = &fosite.RFC6749Error{ErrorField: "access_denied", CodeField: http.StatusBadRequest,
		DescriptionField: "The end user denied the authorization request."}
	ErrRedeemed = fosite.ErrInvalidGrant.WithHint("The device_code has already been used.")
)

// Poll records a client's poll at now and answers it: nil when the tokens may be issued (the
// caller then marks the authorization Redeemed), else the RFC 8628 error the token endpoint
// returns. A pending authorization polled sooner than the interval after the last poll answers
// slow_down and grows the interval (section 3.5); an approved one answers at once, so that a
// client that polls a little early does not wait another round for tokens already there.
func (a *Authorization) Poll(now time.Time) error {
	tooSoon := !a.LastPoll.IsZero() && now.Sub(a.LastPoll) < a.Interval
	a.LastPoll = now
	switch {
	case !now.Before(a.ExpiresAt):
		return ErrExpiredToken
	case a.State == Redeemed:
		return ErrRedeemed
	case a.State == Denied:
		return ErrAccessDenied
	case a.State == Approved:
		return nil
	case a.State != Pending:
	case tooSoon:
		a.Interval += slowDownStep
		return ErrSlowDown
	default:
		return ErrAuthorizationPending
	}
	return fosite.ErrServerError.WithWrap(errors.New("device authorization in unknown state " + string(a.State)))
}
