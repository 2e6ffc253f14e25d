// Package sessionkeys keeps the Secret of the keys that seal the upstream tokens of stored login
// sessions (see tokenseal), and loads its keys into the ring every replica seals and opens with.
// It creates the Secret with a first key, adds a key once the newest is RotateAfter old, and
// retires a replaced key once nothing it sealed can still be stored. Entries of the Secret that
// are not keys are reported and left alone.
//
// Deleting the Secret makes a new one with a new key: what the old keys sealed can no longer be
// opened, so the logins stored until then end at their next refresh, and their upstream tokens
// are not revoked.
package sessionkeys

import (
	"context"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"sealion.dev/core/controller"
	"sealion.dev/servers/supervisor/internal/tokenseal"
)

const (
	// SecretName is the key Secret, in the Supervisor's namespace. One Supervisor runs per
	// namespace: its session storage Secrets are named the same way.
	SecretName = "pinniped-supervisor-session-keys"
	// SecretType marks it for people and tools.
	SecretType corev1.SecretType = "secrets.supervisor.sealion.dev/session-keys"
	// DefaultRotateAfter is how old the newest key gets before a new one replaces it.
	DefaultRotateAfter = 30 * 24 * time.Hour
)

// Config says where the key Secret lives and how keys age.
type Config struct {
	Namespace string
	// Labels are put on the Secret, as on every object the Supervisor creates.
	Labels map[string]string
	// RotateAfter is DefaultRotateAfter when zero.
	RotateAfter time.Duration
	// RetireAfter is how long a replaced key still opens what it sealed, counted from when its
	// successor started sealing: the longest a stored session record lives.
	RetireAfter time.Duration
	// Clock is the real clock unless a test passes a fake one.
	Clock clock.WithTicker
}

// Controller keeps the key Secret and the ring. Make one with New and start it with Run.
type Controller struct {
	*controller.Controller
	cfg     Config
	kube    kubernetes.Interface
	secrets corev1listers.SecretNamespaceLister
	ring    *tokenseal.Ring
}

// New returns the controller of the key Secret of cfg.Namespace, which loads its keys into ring.
func New(cfg Config, kube kubernetes.Interface, secrets corev1informers.SecretInformer, ring *tokenseal.Ring) *Controller {
	if cfg.RotateAfter == 0 {
		cfg.RotateAfter = DefaultRotateAfter
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	c := &Controller{cfg: cfg, kube: kube, secrets: secrets.Lister().Secrets(cfg.Namespace), ring: ring}
	// The resync (a minute) is soon enough for rotation and retirement, which are due in days
	// and hours.
	c.Controller = controller.New(controller.Options{Name: "session-keys", Sync: c.sync, Clock: cfg.Clock})
	c.Watch(secrets.Informer(), controller.Only(func(obj any) bool {
		s, ok := obj.(*corev1.Secret)
		return ok && s.Name == SecretName
	}, controller.AsSingleton))
	return c
}

func (c *Controller) sync(ctx context.Context, _ string) error {
	secret, err := c.secrets.Get(SecretName)
	if apierrors.IsNotFound(err) {
		return c.create(ctx)
	}
	if err != nil {
		return err
	}
	keys, err := tokenseal.ParseKeys(secret.Data)
	if err != nil {
		klog.FromContext(ctx).Error(err, "The session key Secret has entries that are not keys; they are left alone", "secret", SecretName)
	}
	c.ring.Set(keys)
	data := c.age(secret.Data, keys)
	if maps.EqualFunc(data, secret.Data, func(a, b []byte) bool { return string(a) == string(b) }) {
		return nil
	}
	secret = secret.DeepCopy()
	secret.Data = data
	// The update carries the resourceVersion the lister read: of two replicas that rotate at
	// once, one conflicts and retries on what the other wrote.
	_, err = c.kube.CoreV1().Secrets(c.cfg.Namespace).Update(ctx, secret, metav1.UpdateOptions{})
	return err
}

// age returns the Secret's data after rotation and retirement: a new key when there is none or
// the newest is RotateAfter old, and without the keys whose successor has sealed for RetireAfter.
func (c *Controller) age(data map[string][]byte, keys []tokenseal.Key) map[string][]byte {
	now := c.cfg.Clock.Now()
	data = maps.Collect(maps.All(data)) // a copy, never nil
	if len(keys) == 0 || !now.Before(keys[len(keys)-1].Created.Add(c.cfg.RotateAfter)) {
		if _, taken := data[tokenseal.KeyName(now)]; !taken {
			data[tokenseal.KeyName(now)] = tokenseal.NewKeyMaterial()
		}
	}
	for i := 0; i+1 < len(keys); i++ {
		if retired := keys[i+1].Created.Add(tokenseal.KeyActivation + c.cfg.RetireAfter); !now.Before(retired) {
			delete(data, tokenseal.KeyName(keys[i].Created))
		}
	}
	return data
}

// create makes the key Secret with a first key; the informer's event then loads it.
func (c *Controller) create(ctx context.Context) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: c.cfg.Namespace, Labels: c.cfg.Labels},
		Type:       SecretType,
		Data:       c.age(nil, nil),
	}
	_, err := c.kube.CoreV1().Secrets(c.cfg.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // another replica made it; its event follows
	}
	return err
}
