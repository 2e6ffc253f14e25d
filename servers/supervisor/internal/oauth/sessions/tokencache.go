package sessions

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"
)

// accessTokenCacheSize bounds the access tokens kept in memory. The CLI exchanges an access token
// within milliseconds of the login or refresh that issued it, so the cache need only span the
// newest tokens: a 10,000-user organisation at 9 a.m., every user refreshing every two minutes,
// issues about 80 a second, and 4,096 span the last 50 seconds. A cached record is 2-4 KiB, so the
// cache holds at most 16 MiB of the Supervisor's 128 MiB. Older tokens, still valid for the rest of
// AccessTokenLifetime, are read from the API server again.
const accessTokenCacheSize = 4096

// accessTokenWatchRetry is how long WatchAccessTokens waits before it watches again after its
// watch failed.
const accessTokenWatchRetry = time.Second

// WatchAccessTokens keeps the access tokens issued while it runs in memory, from a watch on their
// Secrets, until ctx ends: the token exchange, the Supervisor's busiest endpoint, then reads no
// Secret. The CLI exchanges an access token right after the login or refresh that issued it, on
// whichever replica, so every replica watches. A token is kept from the watch's ADDED event to its
// DELETED event (revocation, rotation or garbage collection) or its expiry, so a revoked token
// stays usable for as long as the watch lags behind etcd, milliseconds: the lag the watch cache
// GetAccessTokenSession reads on a miss has too. Only the watch adds tokens, never a read: its
// events come in etcd's order, so a deletion can never be overtaken by an older copy. When the
// watch ends with an error (it resumes by itself otherwise), deletions may have been missed, so
// the cache is emptied before the next watch starts, which misses nothing that follows it.
func (s *Storage) WatchAccessTokens(ctx context.Context) {
	selector := labels.Set{TypeLabel: typeAccessToken}.String()
	watcher := &toolscache.ListWatch{WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.LabelSelector = selector
		return s.secrets.Watch(ctx, opts)
	}}
	// Not a controller (nothing is reconciled, so core/controller's queue has nothing to do): one
	// watch after another, each from the present.
	for {
		s.watchAccessTokensOnce(ctx, selector, watcher)
		select {
		case <-ctx.Done():
			return
		case <-time.After(accessTokenWatchRetry):
		}
	}
}

// watchAccessTokensOnce empties the cache and fills it from one watch, until the watch ends.
func (s *Storage) watchAccessTokensOnce(ctx context.Context, selector string, watcher toolscache.WatcherWithContext) {
	s.accessTokens.RemoveAll(func(any) bool { return true })
	// A list of one for its resourceVersion: the watch starts at the present, without the state
	// before it, which may be 100,000 sessions.
	list, err := s.secrets.List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
	if err != nil {
		klog.FromContext(ctx).Error(err, "listing access tokens to watch them; exchanges read them from the API server meanwhile")
		return
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, watcher)
	if err != nil {
		klog.FromContext(ctx).Error(err, "watching access tokens; exchanges read them from the API server meanwhile")
		return
	}
	defer w.Stop()
	for event := range w.ResultChan() {
		s.cacheAccessToken(event)
	}
}

// cacheAccessToken applies one watch event to the cache.
func (s *Storage) cacheAccessToken(event watch.Event) {
	secret, ok := event.Object.(*corev1.Secret)
	if !ok || secret.Labels[TypeLabel] != typeAccessToken {
		return
	}
	switch event.Type {
	case watch.Added, watch.Modified:
		ttl := secret.CreationTimestamp.Add(AccessTokenLifetime).Sub(s.now())
		if ttl <= 0 {
			s.accessTokens.Remove(secret.Name)
			return
		}
		s.accessTokens.Add(secret.Name, trimmed(secret), ttl)
	case watch.Deleted:
		s.accessTokens.Remove(secret.Name)
	}
}

// trimmed is what get reads of a Secret, without its managed fields and the rest of its
// metadata, which would double the cache's memory.
func trimmed(secret *corev1.Secret) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: secret.Name, Namespace: secret.Namespace, UID: secret.UID, ResourceVersion: secret.ResourceVersion,
			CreationTimestamp: secret.CreationTimestamp, Labels: secret.Labels, Annotations: secret.Annotations,
		},
		Type: secret.Type,
		Data: secret.Data,
	}
}

// cachedAccessToken is the access token Secret name if the watch has it.
func (s *Storage) cachedAccessToken(name string) (*corev1.Secret, bool) {
	v, ok := s.accessTokens.Get(name)
	if !ok {
		return nil, false
	}
	return v.(*corev1.Secret), true
}

// newAccessTokenCache is the empty cache of WatchAccessTokens, on the storage's clock.
func (s *Storage) newAccessTokenCache() *cache.LRUExpireCache {
	return cache.NewLRUExpireCacheWithClock(accessTokenCacheSize, clock(func() time.Time { return s.now() }))
}

// clock makes a function a cache.Clock.
type clock func() time.Time

func (c clock) Now() time.Time { return c() }
