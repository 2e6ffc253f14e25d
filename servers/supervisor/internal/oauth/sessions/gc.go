package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"sealion.dev/core/controller"
	"sealion.dev/servers/internal/audit"
)

// GarbageCollectInterval is how often RunGarbageCollector sweeps.
const GarbageCollectInterval = 30 * time.Second

// GarbageCollect deletes the Secrets of the namespace whose garbage-collect-after time has passed
// and returns how many it deleted. As Pinniped's collector, it goes by the annotation alone,
// whatever the Secret's type and labels: Secrets that other Pinniped versions wrote during a
// rolling migration, and any other Secret that asks for it, expire too. Secrets without the
// annotation, or whose time does not parse, are left alone. A Secret whose deletion ends a login
// first has the login's upstream tokens revoked; when that fails, the Secret stays for the next
// pass, up to maxRevocationAttempts times. A Secret is deleted only as it was listed (same UID and
// resourceVersion), so that a record used since, or a new Secret of the same name, stays.
func (s *Storage) GarbageCollect(ctx context.Context) (int, error) {
	list, err := s.secrets.List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing Secrets to garbage collect: %w", err)
	}
	deleted := 0
	var errs []error
	for _, secret := range list.Items {
		gcAfter, ok := secret.Annotations[GarbageCollectAfterAnnotation]
		if !ok {
			continue
		}
		after, err := time.Parse(time.RFC3339, gcAfter)
		if err != nil || !s.now().After(after) {
			continue
		}
		if err := s.revokeUpstreamOf(ctx, &secret); err != nil && s.retryRevocation(ctx, &secret, err) {
			continue
		}
		err = s.secrets.Delete(ctx, secret.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &secret.UID, ResourceVersion: &secret.ResourceVersion}})
		switch {
		case err == nil:
			deleted++
			s.auditCollected(ctx, &secret)
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			errs = append(errs, fmt.Errorf("deleting %s: %w", secret.Name, err))
		}
	}
	return deleted, errors.Join(errs...)
}

// auditCollected writes Pinniped's "Session Garbage Collected" event for a deleted record of a
// login that was redeemed or could be (an authorization code, an access or refresh token), with
// the login's session ID, as Pinniped does; PKCE and OpenID Connect records, and Secrets that
// hold no readable record, are deleted silently.
func (s *Storage) auditCollected(ctx context.Context, secret *corev1.Secret) {
	kind := secret.Labels[TypeLabel]
	if kind != typeAuthcode && kind != typeAccessToken && kind != typeRefreshToken {
		return
	}
	if rec, err := decodeRecord(kind, secret); err == nil {
		s.audit.Event(ctx, "Session Garbage Collected", audit.Fields{SessionID: rec.Request.ID}, "storageType", kind)
	}
}

// RunGarbageCollector sweeps once the keys that open upstream tokens are loaded (revocation needs
// them), then every GarbageCollectInterval until ctx ends, as a singleton controller without
// informers: nothing but time makes Secrets expire. Only the replica that leads sweeps (leading
// reports whether this one does): the storage's client writes on every replica, for the logins it
// serves, so the others skip their sweeps rather than race the leader to revoke the same sessions,
// and count attempts of revocations the leader makes.
func (s *Storage) RunGarbageCollector(ctx context.Context, leading func() bool) {
	select {
	case <-s.keys.Ready():
	case <-ctx.Done():
		return
	}
	controller.New(controller.Options{
		Name: "oauth-storage-gc",
		Sync: func(ctx context.Context, _ string) error {
			if leading() {
				s.sweep(ctx)
			}
			return nil
		},
		Resync: GarbageCollectInterval,
	}).Run(ctx)
}

// sweep runs GarbageCollect and logs a failure (each deletion is audited). A failure waits for the next sweep rather than
// the controller's quicker retry: each sweep also retries the failed revocations, whose attempts
// are counted per sweep.
func (s *Storage) sweep(ctx context.Context) {
	if n, err := s.GarbageCollect(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Garbage collecting OAuth sessions", "deleted", n)
	}
}
