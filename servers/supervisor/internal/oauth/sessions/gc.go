package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"sealion.dev/core/controller"
	"sealion.dev/servers/internal/audit"
)

// GarbageCollectInterval is how often RunGarbageCollector sweeps.
const GarbageCollectInterval = 30 * time.Second

// The garbage collector's pace. It lists gcPageSize Secrets at a time, so that its memory does
// not grow with the sessions of a large organisation (100,000 records list as hundreds of MiB at
// once), and deletes gcParallelDeletes at once. Measured (make bench) on 2 cores shared with the
// kube-apiserver and etcd: 8 at once deleted 100,000 expired records in 75 s, 1,340 a second;
// 16 keep the sweep within a minute, and within the API server's own limits (its priority and
// fairness gives a ServiceAccount's workload tens of seats, and refused none of the requests).
const (
	gcPageSize        = 500
	gcParallelDeletes = 16
)

// GarbageCollect deletes the Secrets of the namespace whose garbage-collect-after time has passed
// and returns how many it deleted. As Pinniped's collector, it goes by the annotation alone,
// whatever the Secret's type and labels: Secrets that other Pinniped versions wrote during a
// rolling migration, and any other Secret that asks for it, expire too. Secrets without the
// annotation, or whose time does not parse, are left alone. A Secret whose deletion ends a login
// first has the login's upstream tokens revoked; when that fails, the Secret stays for the next
// pass, up to maxRevocationAttempts times. A Secret is deleted only as it was listed (same UID and
// resourceVersion), so that a record used since, or a new Secret of the same name, stays. When
// the list's continuation expires during a long sweep, the rest waits for the next sweep.
func (s *Storage) GarbageCollect(ctx context.Context) (int, error) {
	start := time.Now()
	var mu sync.Mutex
	deleted := 0
	var errs []error
	live := map[string]int{} // the records that stay, by type, for the metrics
	complete := false
	opts := metav1.ListOptions{Limit: gcPageSize}
	for {
		list, err := s.secrets.List(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			break
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("listing Secrets to garbage collect: %w", err))
			break
		}
		var g errgroup.Group
		g.SetLimit(gcParallelDeletes)
		for i := range list.Items {
			secret := &list.Items[i]
			if !s.expired(secret) {
				if typ := secret.Labels[TypeLabel]; slices.Contains(recordTypes, typ) && secret.Type == SecretType(typ) {
					live[typ]++
				}
				continue
			}
			g.Go(func() error {
				ok, err := s.collect(ctx, secret)
				mu.Lock()
				defer mu.Unlock()
				if ok {
					deleted++
				}
				if err != nil {
					errs = append(errs, err)
				}
				return nil
			})
		}
		_ = g.Wait()
		if list.Continue == "" {
			complete = true
			break
		}
		opts.Continue = list.Continue
	}
	err := errors.Join(errs...)
	observeSweep(start, deleted, live, complete, err)
	return deleted, err
}

// expired reports whether secret asks to be collected, and its time has passed.
func (s *Storage) expired(secret *corev1.Secret) bool {
	gcAfter, ok := secret.Annotations[GarbageCollectAfterAnnotation]
	if !ok {
		return false
	}
	after, err := time.Parse(time.RFC3339, gcAfter)
	return err == nil && s.now().After(after)
}

// collect revokes the upstream tokens of an expired Secret's login, if it ends one, and deletes
// it; it reports whether it deleted it.
func (s *Storage) collect(ctx context.Context, secret *corev1.Secret) (bool, error) {
	if err := s.revokeUpstreamOf(ctx, secret); err != nil && s.retryRevocation(ctx, secret, err) {
		return false, nil
	}
	err := s.secrets.Delete(ctx, secret.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &secret.UID, ResourceVersion: &secret.ResourceVersion}})
	switch {
	case err == nil:
		s.auditCollected(ctx, secret)
		return true, nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return false, nil
	default:
		return false, fmt.Errorf("deleting %s: %w", secret.Name, err)
	}
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
