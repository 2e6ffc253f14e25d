package oidcprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"sealion.dev/servers/supervisor/internal/issuer"
)

// When a login ends, because its Secrets expired or because fosite revoked it (a replayed
// authorization code), the upstream refresh token it holds is revoked at the upstream OIDC
// provider (RFC 7009), so that it does not stay usable there until the upstream expires it.
// GitHub's tokens are not revoked: GitHub has no RFC 7009 endpoint.

// RevocationAttemptsAnnotation counts the failed attempts to revoke the upstream tokens of an
// expired Secret. The garbage collector retries at each pass and deletes the Secret anyway after
// maxRevocationAttempts: an upstream that never answers must not keep garbage forever.
const RevocationAttemptsAnnotation = "storage.sealion.dev/upstream-revocation-attempts"

const (
	maxRevocationAttempts = 3
	revocationTimeout     = 10 * time.Second
)

// upstreamRevoker revokes the upstream tokens that a session of an identity provider in
// namespace holds; Endpoints implements it.
type upstreamRevoker interface {
	revokeUpstream(ctx context.Context, namespace string, s *Session) error
}

// endsLogin reports whether dropping a stored record of kind ends its login, so that its
// upstream tokens must be revoked. The short-lived PKCE and OpenID Connect records, a redeemed
// authorization code and the access token of a login that has a refresh token all expire
// while the login goes on with another record of the same session.
func endsLogin(kind string, rec *record) bool {
	switch kind {
	case typeRefreshToken:
		return true
	case typeAccessToken:
		return !slices.Contains(rec.GrantedScope, ScopeOfflineAccess)
	case typeAuthcode:
		return rec.Active
	}
	return false
}

// revokeUpstreamOf revokes the upstream tokens of the login whose record secret holds, when
// dropping the Secret ends the login. Records it cannot read hold nothing it could revoke.
func (s *Storage) revokeUpstreamOf(ctx context.Context, secret *corev1.Secret) error {
	kind := secret.Labels[TypeLabel]
	if s.revoker == nil || secret.Type != SecretType(kind) || string(secret.Data[VersionKey]) != storageVersion {
		return nil
	}
	var rec record
	if err := json.Unmarshal(secret.Data[DataKey], &rec); err != nil || !endsLogin(kind, &rec) {
		return nil
	}
	session := newSession()
	if err := json.Unmarshal(rec.Session, session); err != nil {
		return nil
	}
	return s.revoker.revokeUpstream(ctx, secret.Namespace, session)
}

// revocationAttempts is the count of failed revocations recorded on secret.
func revocationAttempts(secret *corev1.Secret) int {
	n, _ := strconv.Atoi(secret.Annotations[RevocationAttemptsAnnotation])
	return n
}

// retryRevocation records a failed revocation on secret and expires it now: fosite can no
// longer use it, and the garbage collector retries the revocation. It reports false when the
// retries are used up, and the Secret should just be deleted.
func (s *Storage) retryRevocation(ctx context.Context, secret *corev1.Secret, cause error) bool {
	attempts := revocationAttempts(secret) + 1
	log := klog.FromContext(ctx).WithValues("secret", secret.Name, "attempt", attempts)
	if attempts >= maxRevocationAttempts {
		log.Error(cause, "Revoking upstream tokens failed; deleting the session anyway")
		return false
	}
	log.Error(cause, "Revoking upstream tokens failed; retrying at the next garbage collection")
	secret = secret.DeepCopy()
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Annotations[RevocationAttemptsAnnotation] = strconv.Itoa(attempts)
	if after, err := time.Parse(time.RFC3339, secret.Annotations[GarbageCollectAfterAnnotation]); err != nil || !s.now().After(after) {
		secret.Annotations[GarbageCollectAfterAnnotation] = s.now().Add(-time.Second).UTC().Format(time.RFC3339)
	}
	if _, err := s.secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		log.Error(err, "Recording the failed revocation")
		return false
	}
	return true
}

// revokeRequest ends the login requestID: it revokes the upstream tokens of its records of kind
// kind and deletes them (or, when the upstream failed, leaves them expired for the garbage
// collector to retry).
func (s *store) revokeRequest(ctx context.Context, kind, requestID string) error {
	selector := labels.Set{TypeLabel: kind, RequestIDLabel: requestID}.String()
	list, err := s.secrets.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("listing %s of request %s: %w", kind, requestID, err)
	}
	var errs []error
	for i := range list.Items {
		secret := &list.Items[i]
		if err := s.revokeUpstreamOf(ctx, secret); err != nil && s.retryRevocation(ctx, secret, err) {
			continue
		}
		if err := s.secrets.Delete(ctx, secret.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// revokeUpstream revokes the upstream refresh token of a session of an OIDC identity provider.
// It sends the token only to the issuer that issued it: when the OIDCIdentityProvider now
// points elsewhere, the token is left to expire.
func (e *Endpoints) revokeUpstream(ctx context.Context, namespace string, s *Session) error {
	if s.Custom.ProviderType != string(issuer.TypeOIDC) || s.Custom.OIDC == nil || s.Custom.OIDC.UpstreamRefreshToken == "" {
		return nil
	}
	up, ok := e.upstreams.OIDC(namespace, s.Custom.ProviderResource)
	if !ok {
		return fmt.Errorf("OIDCIdentityProvider %s/%s is not ready", namespace, s.Custom.ProviderResource)
	}
	if up.IssuerURL != s.Custom.OIDC.UpstreamIssuer {
		klog.FromContext(ctx).V(1).Info("Not revoking an upstream token: its identity provider now has another issuer",
			"idp", s.Custom.ProviderResource, "issuer", up.IssuerURL, "tokenIssuer", s.Custom.OIDC.UpstreamIssuer)
		return nil
	}
	return e.revokeToken(ctx, up, s.Custom.OIDC.UpstreamRefreshToken, "refresh_token")
}

// revokeToken revokes token at the upstream's revocation_endpoint, authenticated as the
// upstream client. An upstream that advertises no revocation endpoint has nothing to do.
func (e *Endpoints) revokeToken(ctx context.Context, up *Upstream, token, hint string) error {
	// Bounded, discovery included: the garbage collector revokes one Secret after the other.
	ctx, cancel := context.WithTimeout(ctx, revocationTimeout)
	defer cancel()
	op, err := e.oidcProvider(ctx, up)
	if err != nil {
		return err
	}
	var meta struct {
		Endpoint    string   `json:"revocation_endpoint"`
		AuthMethods []string `json:"revocation_endpoint_auth_methods_supported"`
	}
	if err := op.Claims(&meta); err != nil {
		return fmt.Errorf("reading the discovery document of %s: %w", up.IssuerURL, err)
	}
	if meta.Endpoint == "" {
		return nil
	}
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	// client_secret_basic is the default of RFC 7009 (and RFC 8414); client_secret_post only
	// when the upstream supports nothing else, or the client has no secret.
	basic := up.ClientSecret != "" && (len(meta.AuthMethods) == 0 || slices.Contains(meta.AuthMethods, "client_secret_basic") ||
		!slices.Contains(meta.AuthMethods, "client_secret_post"))
	if !basic {
		form.Set("client_id", up.ClientID)
		if up.ClientSecret != "" {
			form.Set("client_secret", up.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, meta.Endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("revoking an upstream %s: %w", hint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(up.ClientID), url.QueryEscape(up.ClientSecret))
	}
	client := up.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("revoking an upstream %s: %w", hint, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	// RFC 7009: 200 when the token was revoked or was not valid anyway.
	if resp.StatusCode != http.StatusOK {
		var answer struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &answer)
		return fmt.Errorf("revoking an upstream %s at %s: %s %s", hint, meta.Endpoint, resp.Status, answer.Error)
	}
	return nil
}
