package upstreamidp

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/retry"
)

const (
	// LastGoodSecretName is the Secret where the leader records, per identity provider object,
	// what its upstream was last probed successfully with.
	LastGoodSecretName = "pinniped-supervisor-upstream-last-good"
	// LastGoodSecretType marks it for people and tools.
	LastGoodSecretType corev1.SecretType = "secrets.supervisor.sealion.dev/upstream-last-good"
)

// lastGood keeps, in one Secret of the namespace, the fingerprint of the inputs (spec, Secret,
// CA bundle) of each object's last successful probe, under the object's UID. A replica that
// starts while an upstream is down finds there that the object worked with the inputs it has
// now, and keeps a connector for it (see connectors.ProbeCache.SucceededBefore): its users'
// refreshes answer temporarily_unavailable and succeed once the upstream is back, rather than
// send them to log in again. The object's status cannot tell: by then it shows the outage. It
// holds no secret, only hashes and resource versions; the leader writes it, every replica reads
// it from the informer cache.
type lastGood struct {
	namespace string
	labels    map[string]string
	secrets   corev1listers.SecretNamespaceLister
	client    corev1client.SecretInterface
	// mu makes the kinds' controllers write one at a time, each on the latest version.
	mu sync.Mutex
}

// fingerprint returns the fingerprint recorded for uid.
func (l *lastGood) fingerprint(uid types.UID) (string, bool) {
	s, err := l.secrets.Get(LastGoodSecretName)
	if err != nil {
		return "", false
	}
	fp, ok := s.Data[string(uid)]
	return string(fp), ok
}

// set records fingerprint for uid, or forgets uid when fingerprint is empty; it writes only when
// that changes what the cache shows.
func (l *lastGood) set(ctx context.Context, uid types.UID, fingerprint string) error {
	if fp, ok := l.fingerprint(uid); ok == (fingerprint != "") && fp == fingerprint {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := l.client.Get(ctx, LastGoodSecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if fingerprint == "" {
				return nil
			}
			_, err = l.client.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: LastGoodSecretName, Namespace: l.namespace, Labels: l.labels},
				Type:       LastGoodSecretType,
				Data:       map[string][]byte{string(uid): []byte(fingerprint)},
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Created since the read: read it again.
				return apierrors.NewConflict(corev1.Resource("secrets"), LastGoodSecretName, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		if fingerprint == "" {
			if _, ok := s.Data[string(uid)]; !ok {
				return nil
			}
			delete(s.Data, string(uid))
		} else {
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data[string(uid)] = []byte(fingerprint)
		}
		_, err = l.client.Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("recording the last good probe of %s in Secret %s/%s: %w", uid, l.namespace, LastGoodSecretName, err)
	}
	return nil
}
