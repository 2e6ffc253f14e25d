package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/tokenseal"
)

// When a login ends, because its Secrets expired or because fosite revoked it (a replayed
// authorization code), the upstream tokens it holds are revoked by its connector (an OIDC
// provider's refresh token, RFC 7009), so that they do not stay usable there until the upstream
// expires them.

// RevocationAttemptsAnnotation counts the failed attempts to revoke the upstream tokens of an
// expired Secret. The garbage collector retries at each pass and deletes the Secret anyway after
// maxRevocationAttempts: an upstream that never answers must not keep garbage forever.
const RevocationAttemptsAnnotation = "storage.sealion.dev/upstream-revocation-attempts"

const maxRevocationAttempts = 3

// Connectors finds the connectors of the identity provider objects; the connectors.Registry that
// the upstreamidp controller keeps implements it.
type Connectors interface {
	// Get returns the connector of the identity provider object namespace/name of type typ.
	Get(typ issuer.IdentityProviderType, namespace, name string) (connectors.Connector, bool)
}

// offlineAccess is the scope that gets a login a refresh token.
const offlineAccess = "offline_access"

// endsLogin reports whether dropping a stored record of kind ends its login, so that its
// upstream tokens must be revoked. The short-lived PKCE and OpenID Connect records, a redeemed
// authorization code, a rotated refresh token and the access token of a login that has a
// refresh token all expire while the login goes on with another record of the same session.
func endsLogin(kind string, rec *record) bool {
	switch kind {
	case typeRefreshToken, typeAuthcode:
		return rec.active()
	case typeAccessToken:
		return !slices.Contains(rec.Request.GrantedScope, offlineAccess)
	}
	return false
}

// revokeUpstreamOf revokes the upstream tokens of the login whose record secret holds, when
// dropping the Secret ends the login. Records it cannot read hold nothing it could revoke; those
// whose tokens cannot be opened yet (no keys loaded) are retried.
func (s *Storage) revokeUpstreamOf(ctx context.Context, secret *corev1.Secret) error {
	kind := secret.Labels[TypeLabel]
	rec, err := decodeRecord(kind, secret)
	if err != nil || !endsLogin(kind, rec) {
		return nil
	}
	session := NewSession()
	if err := s.decodeSession(rec.Request.Session, rec.Request.ID, session); errors.Is(err, tokenseal.ErrNotReady) {
		return err
	} else if err != nil {
		return nil
	}
	return s.revokeUpstream(ctx, secret.Namespace, rec.Request.ID, session)
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
func (s *Store) revokeRequest(ctx context.Context, kind, requestID string) error {
	return s.revokeRecords(ctx, labels.Set{TypeLabel: kind, RequestIDLabel: requestID}.String())
}

// revokeRecords deletes the records selector selects, first revoking the upstream tokens of those
// whose deletion ends a login; a record whose upstream failed is left expired, for the garbage
// collector to retry.
func (s *Storage) revokeRecords(ctx context.Context, selector string) error {
	list, err := s.secrets.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("listing the records %s: %w", selector, err)
	}
	return s.revokeSecrets(ctx, list.Items)
}

// revokeSecrets deletes records as revokeRecords does.
func (s *Storage) revokeSecrets(ctx context.Context, secrets []corev1.Secret) error {
	var errs []error
	for i := range secrets {
		secret := &secrets[i]
		if err := s.revokeUpstreamOf(ctx, secret); err != nil && s.retryRevocation(ctx, secret, err) {
			continue
		}
		if err := s.secrets.Delete(ctx, secret.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// revokeUpstream revokes the upstream tokens of the session of login requestID, of an identity
// provider in namespace, with the connector of that identity provider. A connector that is not ready now may be later:
// the failure makes the caller retry.
func (s *Storage) revokeUpstream(ctx context.Context, namespace, requestID string, sess *Session) error {
	if !sess.Custom.Revocable() {
		return nil
	}
	typ := issuer.IdentityProviderType(sess.Custom.ProviderType)
	conn, ok := s.connectors.Get(typ, namespace, sess.Custom.ProviderResource)
	if !ok {
		return fmt.Errorf("identity provider %s/%s of type %s is not ready", namespace, sess.Custom.ProviderResource, typ)
	}
	revoker, ok := conn.(connectors.RevokeConnector)
	if !ok {
		return nil
	}
	callCtx, call := connectors.StartCall(ctx, typ, connectors.OpRevoke)
	revoked, err := revoker.Revoke(callCtx, sess.Custom.Session)
	call.End(err)
	if err == nil && revoked != "" {
		s.audit.Event(ctx, "Upstream OIDC Token Revoked", audit.Fields{SessionID: requestID}, "type", revoked)
	}
	return err
}
