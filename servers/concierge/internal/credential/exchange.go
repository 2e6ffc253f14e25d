// Package credential exchanges an external token for a short-lived cluster client certificate:
// the heart of TokenCredentialRequest. Every failure of a token, whatever its cause, is the same
// ErrAuthenticationFailed, so a caller learns nothing about why a token was refused; the cause goes
// to the logs at debug level, never the token itself. Only a missing token is told apart (RequireToken).
package credential

import (
	"cmp"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/klog/v2"

	"sealion.dev/core/reservednames"
	"sealion.dev/core/tracing"
	"sealion.dev/servers/concierge/internal/authncache"
	"sealion.dev/servers/concierge/internal/certextra"
	"sealion.dev/servers/internal/audit"
)

// ErrAuthenticationFailed is the one answer to any token that does not yield a credential, including
// one for a name Kubernetes reserves (package reservednames).
var ErrAuthenticationFailed = errors.New("authentication failed")

// RequireToken refuses a TokenCredentialRequest named name without a token as upstream does: a
// missing token is a malformed request, not a bad credential, so it is a 422 Invalid rather than
// ErrAuthenticationFailed. Upstream names the field spec.token.value and leaves the Kind out of the
// error (the message starts ".<loginGroup>"); both are kept so clients see the same text.
func RequireToken(loginGroup, name, token string) error {
	if token != "" {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: loginGroup}, name,
		field.ErrorList{field.Required(field.NewPath("spec", "token", "value"), "token must be supplied")})
}

// DefaultTTL is the lifetime of issued client certificates.
const DefaultTTL = 5 * time.Minute

// ClientCertIssuer signs client certificates for a username, groups and OUs (the user's extras,
// package certextra), valid for ttl or as long as its signer allows, and says until when: the
// response's expirationTimestamp.
type ClientCertIssuer interface {
	IssueClientCert(ctx context.Context, username string, groups, organizationalUnits []string, ttl time.Duration) (certPEM, keyPEM []byte, notAfter time.Time, err error)
}

// TokenAuthenticator authenticates a token with the authenticator named by key.
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, key authncache.Key, token string) (*authenticator.Response, bool, error)
}

// Credential is what a successful exchange returns.
type Credential struct {
	ExpirationTimestamp   time.Time
	ClientCertificateData string
	ClientKeyData         string
}

// Exchanger authenticates tokens and issues certificates.
type Exchanger struct {
	Authenticators TokenAuthenticator
	Issuer         ClientCertIssuer
	// Reserved are the operator's exceptions to the refusal of "system:" names; the zero value
	// refuses them all.
	Reserved reservednames.Exceptions
	TTL      time.Duration // DefaultTTL when zero
	Now      func() time.Time
	// Audit receives Pinniped's TokenCredentialRequest audit events.
	Audit *audit.Logger
}

// Exchange authenticates token with the authenticator under key and, for a user a client
// certificate can express, issues one. It records the outcome in the metrics.
func (e *Exchanger) Exchange(ctx context.Context, key authncache.Key, token string) (*Credential, error) {
	start := e.now()
	ctx, span := tracing.Start(ctx, "exchange token")
	cred, reason := e.exchange(ctx, key, token)
	observe(key.Kind, reason, e.now().Sub(start))
	endSpan(span, key.Kind, reason)
	if reason != "" {
		return nil, ErrAuthenticationFailed
	}
	return cred, nil
}

// exchange returns the credential, or the reason it refused (one of the failures counter's),
// which the client never sees: every refusal is ErrAuthenticationFailed to it.
func (e *Exchanger) exchange(ctx context.Context, key authncache.Key, token string) (*Credential, string) {
	logger := klog.FromContext(ctx).WithValues("authenticator", key)
	if token == "" {
		logger.V(4).Info("token credential request refused", "reason", "empty token")
		return nil, reasonEmptyToken
	}
	e.Audit.Event(ctx, "TokenCredentialRequest Token Received", audit.Fields{}, "tokenID", e.Audit.TokenID(token))
	authn := auditedAuthenticator{APIGroup: key.APIGroup, Kind: key.Kind, Name: key.Name}
	authnCtx, authnSpan := tracing.Start(ctx, "authenticate token")
	resp, ok, err := e.Authenticators.AuthenticateToken(authnCtx, key, token)
	authnSpan.End()
	if err != nil {
		// The error can quote token contents (claims), so it is logged at debug level only; the
		// audit event, written for the operator, carries it as Pinniped's does.
		logger.V(4).Info("token credential request refused", "reason", "token not authenticated", "err", err)
		e.Audit.Event(ctx, "TokenCredentialRequest Unexpected Error", audit.Fields{},
			"reason", "authenticator returned an error", "err", err, "authenticator", authn)
		return nil, reasonAuthenticatorError
	}
	if !ok {
		logger.V(4).Info("token credential request refused", "reason", "token not authenticated")
		e.Audit.Event(ctx, "TokenCredentialRequest Authentication Failed", audit.Fields{},
			"reason", "auth rejected by authenticator", "authenticator", authn)
		return nil, reasonNotAuthenticated
	}
	refusal := reasonUnsupportedUser
	reason := unsupportedUser(resp.User)
	if reason != "" {
		logger.V(4).Info("token credential request refused", "reason", reason)
	} else if reason = e.Reserved.Refused(resp.User.GetName(), resp.User.GetGroups()); reason != "" {
		// An authenticator that yields a reserved name is misconfigured or attacked: that is worth
		// an operator's attention, so it is logged at the default level (names only, never the token).
		logger.Info("token credential request refused", "reason", reason)
		refusal = reasonReservedName
	}
	if reason != "" {
		var name, uid string
		var extras int
		if resp.User != nil {
			name, uid, extras = resp.User.GetName(), resp.User.GetUID(), len(resp.User.GetExtra())
		}
		e.Audit.Event(ctx, "TokenCredentialRequest Unsupported UserInfo",
			audit.Fields{PersonalInfo: []any{"userInfoName", name, "userInfoUID", uid}},
			"userInfoExtrasCount", extras, "reason", "unsupported value in userInfo returned by authenticator",
			"err", reason, "authenticator", authn)
		return nil, refusal
	}
	ttl := e.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	issueCtx, issueSpan := tracing.Start(ctx, "issue client certificate")
	certPEM, keyPEM, expires, err := e.Issuer.IssueClientCert(issueCtx, resp.User.GetName(), resp.User.GetGroups(), certextra.OrganizationalUnits(resp.User.GetExtra()), ttl)
	issueSpan.End()
	if err != nil {
		logger.Error(err, "token credential request could not issue a certificate")
		e.Audit.Event(ctx, "TokenCredentialRequest Unexpected Error", audit.Fields{},
			"reason", "cert issuer returned an error", "err", err, "authenticator", authn)
		return nil, reasonIssuerError
	}
	logger.V(4).Info("token credential request succeeded", "username", resp.User.GetName())
	e.Audit.Event(ctx, "TokenCredentialRequest Authenticated User",
		audit.Fields{PersonalInfo: []any{"username", resp.User.GetName(), "groups", resp.User.GetGroups(), "extras", resp.User.GetExtra()}},
		"issuedClientCert", validity(certPEM, expires), "authenticator", authn)
	return &Credential{
		ExpirationTimestamp:   expires,
		ClientCertificateData: string(certPEM),
		ClientKeyData:         string(keyPEM),
	}, ""
}

// endSpan ends an exchange's span with the authenticator's kind and the result: success or the
// failure's reason, never the token or what the authenticator said of it.
func endSpan(span trace.Span, kind, reason string) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("pinniped.authenticator_kind", knownKind(kind)), attribute.String("pinniped.result", cmp.Or(reason, "success")))
	if reason != "" {
		span.SetStatus(codes.Error, reason)
	}
	span.End()
}

// auditedAuthenticator names the authenticator in audit events with Pinniped's keys.
type auditedAuthenticator struct {
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// certValidity is the issuedClientCert of an audit event.
type certValidity struct {
	NotBefore string `json:"notBefore,omitempty"`
	NotAfter  string `json:"notAfter"`
}

// validity reads the validity of the issued certificate for the audit event; when it cannot be
// parsed (a test issuer), notAfter is the expiry the response reports.
func validity(certPEM []byte, expires time.Time) certValidity {
	if block, _ := pem.Decode(certPEM); block != nil {
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
			return certValidity{NotBefore: cert.NotBefore.UTC().Format(time.RFC3339), NotAfter: cert.NotAfter.UTC().Format(time.RFC3339)}
		}
	}
	return certValidity{NotAfter: expires.UTC().Format(time.RFC3339)}
}

// unsupportedUser says why a certificate cannot represent u, or "" when it can: a certificate
// holds a username, groups and extras (in OUs, as upstream, package certextra), so a UID would be
// silently lost, and an extra key upstream refuses is refused too.
func unsupportedUser(u user.Info) string {
	switch {
	case u == nil || u.GetName() == "":
		return "empty username is not allowed"
	case u.GetUID() != "":
		return "UIDs are not supported"
	}
	if err := certextra.Validate(u.GetExtra()); err != nil {
		return err.Error()
	}
	return ""
}

func (e *Exchanger) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}
