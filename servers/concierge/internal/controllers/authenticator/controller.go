// Package authenticator runs the JWTAuthenticator and WebhookAuthenticator controllers. Both do the
// same thing for their kind: resolve the TLS spec, validate the spec and build a token authenticator,
// put it in the authenticator cache, and report every validation step as a status condition. A bad
// spec shows up in conditions (phase Error) and is retried with backoff; it never stops the server.
//
// An authenticator is rebuilt only when its spec or CA bundle changes; a healthy one is left alone so
// that a flaky issuer does not take logins down, and JWKS key rotation is handled by the
// authenticator itself (it refetches keys on an unknown key ID).
package authenticator

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	"sealion.dev/core/cabundle"
	"sealion.dev/core/controller"
	"sealion.dev/servers/concierge/internal/authenticator/checks"
	"sealion.dev/servers/concierge/internal/authncache"
)

// Object is a JWTAuthenticator or WebhookAuthenticator.
type Object interface {
	metav1.Object
	comparable
}

// kind adapts the controller to one authenticator kind.
type kind[T Object] struct {
	name           string   // Kind, as TokenCredentialRequests name it
	conditionTypes []string // every condition the kind reports, Ready last
	get            func(name string) (T, error)
	list           func() ([]T, error)
	spec           func(T) any
	tls            func(T) *authv1alpha1.TLSSpec
	conditions     func(T) []metav1.Condition
	phase          func(T) authv1alpha1.Phase
	// build validates the spec and returns the authenticator (nil when invalid) and the outcome of
	// every step after resolving the CA bundle.
	build func(ctx context.Context, obj T, caBundle []byte) (authncache.Value, checks.List)
	// urlCondition is the condition of the spec's URL, which checkURL records: judged even when
	// the CA bundle cannot be resolved, as upstream does.
	urlCondition string
	checkURL     func(obj T, l *checks.List) bool
	updateStatus func(ctx context.Context, obj T, conditions []metav1.Condition, phase authv1alpha1.Phase) error
	informer     cache.SharedIndexInformer
}

// Shared is what both controllers need besides their kind.
type Shared struct {
	APIGroup   string // authentication.concierge.<suffix>, the cache key's group
	Namespace  string // where TLS Secrets and ConfigMaps are read from
	Cache      *authncache.Cache
	Secrets    corev1informers.SecretInformer
	ConfigMaps corev1informers.ConfigMapInformer
}

// Controller reconciles one kind, keyed by authenticator name.
type Controller[T Object] struct {
	*controller.Controller
	shared Shared
	kind   kind[T]

	mu    sync.Mutex
	built map[string]build // name -> how the cached authenticator was built
}

// build is what a cached authenticator was built from (spec and CA hash) and the checks it passed.
type build struct {
	hash  [32]byte
	steps checks.List
}

// timing is the loop's resync and retry backoff. Informer events do the real work; the resync
// only catches a missed one, and at the backoff's ceiling it retries a failing authenticator no
// more often than the backoff does, while a healthy one costs a hash comparison.
var timing = controller.Options{Resync: 2 * time.Minute, MinBackoff: time.Second, MaxBackoff: 2 * time.Minute}

// newController returns the controller of kind k; opts gives the loop's timing (see timing).
func newController[T Object](s Shared, k kind[T], opts controller.Options) *Controller[T] {
	c := &Controller[T]{shared: s, kind: k, built: map[string]build{}}
	opts.Name, opts.Sync, opts.Keys, opts.Workers = k.name, c.sync, c.names, 2
	c.Controller = controller.New(opts)
	c.Watch(k.informer, controller.ObjectName)
	// A changed CA Secret or ConfigMap may matter to any authenticator; there are few of them.
	c.Watch(s.Secrets.Informer(), c.All)
	c.Watch(s.ConfigMaps.Informer(), c.All)
	return c
}

func (c *Controller[T]) names() ([]string, error) {
	objs, err := c.kind.list()
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	return names, err
}

// errInvalid asks for a retry with backoff after a failed validation, whose details are in the
// conditions already.
var errInvalid = errors.New("authenticator is not valid yet")

func (c *Controller[T]) sync(ctx context.Context, name string) error {
	key := authncache.Key{APIGroup: c.shared.APIGroup, Kind: c.kind.name, Name: name}
	obj, err := c.kind.get(name)
	if apierrors.IsNotFound(err) {
		c.shared.Cache.Delete(key)
		c.setBuilt(name, nil)
		return nil
	}
	if err != nil {
		return err
	}

	caBundle, tlsErr := c.resolveTLS(obj)
	if tlsErr != nil {
		// The spec cannot be tried; drop any authenticator built from an older spec.
		c.shared.Cache.Delete(key)
		c.setBuilt(name, nil)
		var steps checks.List
		steps.Fail(authv1alpha1.ConditionTLSConfigurationValid, tlsErr.Reason, "%s", tlsErr.Message)
		c.kind.checkURL(obj, &steps)
		steps.Skip(c.laterSteps()...)
		if err := c.writeStatus(ctx, obj, steps); err != nil {
			return err
		}
		return errInvalid
	}

	hash, err := specHash(c.kind.spec(obj), caBundle)
	if err != nil {
		return err
	}
	if b, ok := c.builtFor(name); ok && b.hash == hash && c.shared.Cache.Get(key) != nil {
		// Unchanged and working: keep it, and only make sure the status says so (the status write
		// after building it may have failed).
		return c.writeStatus(ctx, obj, b.steps)
	}

	value, steps := c.kind.build(ctx, obj, caBundle)
	if value == nil {
		c.shared.Cache.Delete(key)
		c.setBuilt(name, nil)
		if err := c.writeStatus(ctx, obj, steps); err != nil {
			return err
		}
		return errInvalid
	}
	c.shared.Cache.Store(key, value)
	// Clipped so that writeStatus, which appends Ready to its copy, cannot write into the stored steps.
	c.setBuilt(name, &build{hash: hash, steps: slices.Clip(steps)})
	return c.writeStatus(ctx, obj, steps)
}

// resolveTLS reads the CA bundle the spec asks for; nil means the system roots.
func (c *Controller[T]) resolveTLS(obj T) ([]byte, *cabundle.Error) {
	var inline string
	var source *cabundle.Source
	if t := c.kind.tls(obj); t != nil {
		inline = t.CertificateAuthorityData
		if s := t.CertificateAuthorityDataSource; s != nil {
			source = &cabundle.Source{Kind: string(s.Kind), Name: s.Name, Key: s.Key}
		}
	}
	bundle, err := cabundle.Resolve("spec.tls", inline, source, cabundle.Listers{
		Namespace: c.shared.Namespace, Secrets: c.shared.Secrets.Lister(), ConfigMaps: c.shared.ConfigMaps.Lister(),
	})
	var e *cabundle.Error
	if errors.As(err, &e) {
		return nil, e
	}
	return bundle, nil
}

// laterSteps are the kind's steps after TLS and the URL, which cannot run when TLS is broken.
func (c *Controller[T]) laterSteps() []string {
	var out []string
	for _, t := range c.kind.conditionTypes {
		if t != authv1alpha1.ConditionTLSConfigurationValid && t != c.kind.urlCondition && t != authv1alpha1.ConditionReady {
			out = append(out, t)
		}
	}
	return out
}

// writeStatus adds Ready and the phase, and updates the status only when something changed.
func (c *Controller[T]) writeStatus(ctx context.Context, obj T, steps checks.List) error {
	phase := authv1alpha1.PhaseReady
	if steps.OK() {
		steps.Pass(authv1alpha1.ConditionReady, "the "+c.kind.name+" is ready")
	} else {
		phase = authv1alpha1.PhaseError
		steps.Fail(authv1alpha1.ConditionReady, authv1alpha1.ReasonNotReady, "the %s is not ready: see other conditions for details", c.kind.name)
	}
	current := c.kind.conditions(obj)
	updated := make([]metav1.Condition, len(current))
	copy(updated, current)
	changed := false
	for _, cond := range steps.Conditions(obj.GetGeneration()) {
		if meta.SetStatusCondition(&updated, cond) {
			changed = true
		}
	}
	// Sorted by type, as upstream keeps them (conditions of other types are kept).
	slices.SortStableFunc(updated, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	if !changed && c.kind.phase(obj) == phase && slices.EqualFunc(updated, current, func(a, b metav1.Condition) bool { return a.Type == b.Type }) {
		return nil
	}
	return c.kind.updateStatus(ctx, obj, updated, phase)
}

func (c *Controller[T]) builtFor(name string) (build, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.built[name]
	return b, ok
}

func (c *Controller[T]) setBuilt(name string, b *build) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b == nil {
		delete(c.built, name)
		return
	}
	c.built[name] = *b
}

func specHash(spec any, caBundle []byte) ([32]byte, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return [32]byte{}, fmt.Errorf("hashing the spec: %w", err)
	}
	return sha256.Sum256(append(append(b, 0), caBundle...)), nil
}

// listAll adapts a lister's List to the kind's list function.
func listAll[T any](list func(labels.Selector) ([]T, error)) func() ([]T, error) {
	return func() ([]T, error) { return list(labels.Everything()) }
}
