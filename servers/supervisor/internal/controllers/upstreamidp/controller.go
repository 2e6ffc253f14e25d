// Package upstreamidp runs the Supervisor's upstream identity provider controller. For every kind
// of identity provider object (see package kinds) it runs one controller, keyed by object name,
// that on every change to an object of that kind or to the Secrets and ConfigMaps of the
// namespace, and at every resync:
//
//   - opens the object with its kind's factory, which reads the object's Secret and CA bundle,
//     computes its conditions and probes the upstream (OIDC discovery, an LDAP bind, a TLS dial of
//     the GitHub API) only when what the probe depends on changed, its last success is older
//     than connectors.ProbeTTL, or a login or refresh found the upstream unreachable since;
//   - writes the conditions and phase to its status when they differ from those stored;
//   - puts the connector the factory returns in the connectors.Registry (that of a Ready object,
//     or the last good one of an object whose upstream cannot be reached, see
//     connectors.Factory), and drops any other's;
//   - records what a successful probe was made with (see lastGood), so that a replica started
//     during an outage keeps the connectors that worked.
//
// When the endpoints report to the registry that a connector could not reach its upstream, the
// object's probe is expired and the object synced at once, so that its status shows the outage
// within seconds rather than at the end of ProbeTTL. Otherwise an object is synced again when its
// last success goes stale, so that the leader, the only replica whose status writes go through,
// sees an outage that only the others' logins met within ProbeTTL (at the resyncs alone, a
// minute apart like ProbeTTL, a success a moment younger than ProbeTTL at one resync waited for
// the next: two minutes in all). A failed probe is not remembered: the object is probed again at
// every resync (controller.DefaultResync) until the upstream is back, and reports in between
// cause no probe.
//
// A controller per kind, each with one worker, keeps a slow upstream (an LDAP server that never
// answers) from delaying other kinds; keys per object retry a failing object on its own. An
// unusable spec shows up in conditions and is never an error of the controller.
package upstreamidp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/cabundle"
	"sealion.dev/core/controller"
	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	idpclient "sealion.dev/core/generated/supervisor/clientset/versioned/typed/idp/v1alpha1"
	idpinformers "sealion.dev/core/generated/supervisor/informers/externalversions/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
)

// probeTimeout bounds one opening of an object, its probe of the upstream included.
const probeTimeout = 90 * time.Second

// Informers are what the controller watches, all of the Supervisor's namespace.
type Informers struct {
	// IDPs are the informers of the identity provider objects; each kind takes its own.
	IDPs       idpinformers.Interface
	Secrets    corev1informers.SecretInformer
	ConfigMaps corev1informers.ConfigMapInformer
}

// Config is the controller's configuration.
type Config struct {
	// Namespace is the Supervisor's, where the objects and their Secrets are.
	Namespace string
	// Labels are set on the Secret the controller creates, as on the install's objects.
	Labels map[string]string
	// Settings configure the connectors it opens.
	Settings connectors.Settings
	// Clock is the real clock unless a test passes a fake one.
	Clock clock.WithTicker
}

// Clients are the controller's; only the leader's writes go through.
type Clients struct {
	// Supervisor must speak the configured API group suffix (see groupsuffix.Transport).
	Supervisor supervisorclientset.Interface
	Kube       kubernetes.Interface
}

// Controller is the upstream identity provider controller. Make one with New and start it with
// Run.
type Controller struct {
	kinds []*kindController
}

// kindController syncs the objects of one kind.
type kindController struct {
	kind      connectors.Kind
	namespace string
	client    idpclient.IdpV1alpha1Interface
	registry  *connectors.Registry
	objects   cache.Indexer
	secrets   corev1listers.SecretNamespaceLister
	tls       cabundle.Listers
	settings  connectors.Settings
	lastGood  *lastGood
	now       func() time.Time
	loop      *controller.Controller
	// probes are the objects' probe caches by name: the worker adds and removes them, reports of
	// unreachable upstreams expire them.
	mu     sync.Mutex
	probes map[string]*probeSlot
}

// probeSlot is the probe cache of one object; a new object of the same name gets a new one.
type probeSlot struct {
	uid   types.UID
	cache *connectors.ProbeCache
}

// New returns the controller for the identity provider objects of every kind in the namespace;
// it publishes the connectors of the Ready ones to registry.
func New(cfg Config, clients Clients, kinds []connectors.Kind, informers Informers, registry *connectors.Registry) *Controller {
	c := &Controller{}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	namespace := cfg.Namespace
	shared := &lastGood{
		namespace: namespace,
		labels:    cfg.Labels,
		secrets:   informers.Secrets.Lister().Secrets(namespace),
		client:    clients.Kube.CoreV1().Secrets(namespace),
	}
	for _, kind := range kinds {
		informer := kind.Informer(informers.IDPs)
		k := &kindController{
			kind:      kind,
			namespace: namespace,
			client:    clients.Supervisor.IdpV1alpha1(),
			registry:  registry,
			objects:   informer.GetIndexer(),
			secrets:   informers.Secrets.Lister().Secrets(namespace),
			tls: cabundle.Listers{
				Namespace:  namespace,
				Secrets:    informers.Secrets.Lister(),
				ConfigMaps: informers.ConfigMaps.Lister(),
			},
			settings: cfg.Settings,
			lastGood: shared,
			now:      cfg.Clock.Now,
			probes:   map[string]*probeSlot{},
		}
		k.loop = controller.New(controller.Options{
			Name:  "upstream-idp-" + strings.ToLower(kind.Name),
			Sync:  k.sync,
			Keys:  k.keys,
			Clock: cfg.Clock,
		})
		k.loop.Watch(informer, controller.ObjectName)
		// Any object may refer to any Secret or ConfigMap. Session storage Secrets come and go
		// with every login, and the controller's own record of last good probes changes with
		// its syncs; they configure no identity provider.
		k.loop.Watch(informers.Secrets.Informer(), controller.Only(func(obj any) bool {
			s, ok := obj.(*corev1.Secret)
			return !ok || !strings.HasPrefix(string(s.Type), "storage.pinniped.dev/") && s.Type != LastGoodSecretType
		}, k.loop.All))
		k.loop.Watch(informers.ConfigMaps.Informer(), k.loop.All)
		registry.OnUnreachable(kind.Type, k.unreachable)
		c.kinds = append(c.kinds, k)
	}
	return c
}

// Synced reports whether the objects of every kind that existed at start have been synced once:
// the registry then holds the connector of each Ready one.
func (c *Controller) Synced() bool {
	for _, k := range c.kinds {
		if !k.loop.Synced() {
			return false
		}
	}
	return true
}

// Run runs the controller of every kind until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, k := range c.kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.loop.Run(ctx)
		}()
	}
	wg.Wait()
}

// keys are the names of the kind's objects.
func (k *kindController) keys() ([]string, error) {
	var names []string
	err := cache.ListAllByNamespace(k.objects, k.namespace, labels.Everything(), func(obj any) {
		if o, ok := obj.(metav1.Object); ok {
			names = append(names, o.GetName())
		}
	})
	return names, err
}

// sync opens the object name, writes its status and publishes or drops its connector.
func (k *kindController) sync(ctx context.Context, name string) error {
	obj, exists, err := k.objects.GetByKey(k.namespace + "/" + name)
	if err != nil {
		return err
	}
	o, ok := obj.(connectors.Object)
	if !exists || !ok {
		k.registry.Delete(k.kind.Type, k.namespace, name)
		k.mu.Lock()
		gone := k.probes[name]
		delete(k.probes, name)
		k.mu.Unlock()
		if gone != nil {
			return k.lastGood.set(ctx, gone.uid, "")
		}
		return nil
	}
	k.mu.Lock()
	slot := k.probes[name]
	if slot == nil || slot.uid != o.GetUID() {
		slot = &probeSlot{uid: o.GetUID(), cache: connectors.NewProbeCache(k.now)}
		if fp, ok := k.lastGood.fingerprint(o.GetUID()); ok {
			slot.cache.SucceededBefore(fp)
		}
		k.probes[name] = slot
	}
	k.mu.Unlock()
	openCtx, cancel := context.WithTimeout(ctx, probeTimeout)
	conn, conds, err := k.kind.Open(openCtx, o, connectors.Inputs{Secret: k.secret, CABundle: k.caBundle, Probes: slot.cache, Settings: k.settings})
	cancel()
	if err != nil {
		k.registry.Delete(k.kind.Type, k.namespace, name)
		return err
	}
	if conn != nil {
		k.registry.Set(k.kind.Type, k.namespace, name, conn)
	} else {
		k.registry.Delete(k.kind.Type, k.namespace, name)
	}
	if left, ok := slot.cache.FreshFor(); ok { // probe again when it goes stale (see the package doc)
		k.loop.EnqueueAfter(name, left)
	}
	err = k.writeStatus(ctx, o, conds)
	if fp, ok := slot.cache.Succeeded(); ok {
		err = errors.Join(err, k.lastGood.set(ctx, o.GetUID(), fp))
	}
	return err
}

// unreachable hears that the connector of namespace/name could not reach its upstream: it expires
// the object's probe and syncs the object now, unless its last probe already failed.
func (k *kindController) unreachable(namespace, name string) {
	if namespace != k.namespace {
		return
	}
	k.mu.Lock()
	slot := k.probes[name]
	k.mu.Unlock()
	if slot != nil && slot.cache.Expire() {
		k.loop.Enqueue(name)
	}
}

// secret returns the Secret name of the namespace, or nil when it does not exist.
func (k *kindController) secret(name string) (*corev1.Secret, error) {
	s, err := k.secrets.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", k.namespace, name, err)
	}
	return s, nil
}

// caBundle resolves a TLS spec: a PEM bundle, nil for the system roots, or a *cabundle.Error.
func (k *kindController) caBundle(field string, spec *idpv1alpha1.TLSSpec) ([]byte, error) {
	if spec == nil {
		return nil, nil
	}
	var source *cabundle.Source
	if s := spec.CertificateAuthorityDataSource; s != nil {
		source = &cabundle.Source{Kind: string(s.Kind), Name: s.Name, Key: s.Key}
	}
	return cabundle.Resolve(field, spec.CertificateAuthorityData, source, k.tls)
}

// writeStatus updates the object's status when conds or their phase differ from those stored.
// Conditions of types no longer reported are kept, and all are sorted by type, as upstream
// Pinniped does.
func (k *kindController) writeStatus(ctx context.Context, obj connectors.Object, conds []metav1.Condition) error {
	old := k.kind.Status(obj)
	status := *old.DeepCopy()
	for _, cond := range conds {
		meta.SetStatusCondition(&status.Conditions, cond)
	}
	slices.SortStableFunc(status.Conditions, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	status.Phase = connectors.PhaseOf(conds)
	if equality.Semantic.DeepEqual(old, status) {
		return nil
	}
	err := k.kind.UpdateStatus(ctx, k.client, obj, status)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// Our cache is behind (another replica, our own last write, a deletion): the event
		// that brings it up to date triggers the next sync.
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of %s %s: %w", k.kind.Name, obj.GetName(), err)
	}
	return nil
}
