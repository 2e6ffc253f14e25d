// Package upstreamidp runs the Supervisor's upstream identity provider controller. For each kind
// (OIDCIdentityProvider, LDAPIdentityProvider, ActiveDirectoryIdentityProvider,
// GitHubIdentityProvider) a level-triggered loop, on every change to the providers of that kind
// or to the Secrets and ConfigMaps of the namespace:
//
//   - reads each provider's client or bind Secret and resolves its CA bundle;
//   - computes its conditions, probing the upstream (OIDC discovery, an LDAP bind, a TLS dial of
//     the GitHub API) only when what the probe depends on changed or its last success is older
//     than probeTTL;
//   - writes the conditions and phase to its status when they differ from those stored;
//   - publishes the Ready providers to the upstreams.Registry, dropping all others.
//
// The kinds run in separate loops so that a slow upstream (an LDAP server that never answers)
// delays only its own kind. An unusable spec shows up in conditions and is never an error of the
// controller.
package upstreamidp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/cabundle"
	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	idpinformers "sealion.dev/core/generated/supervisor/informers/externalversions/idp/v1alpha1"
	idplisters "sealion.dev/core/generated/supervisor/listers/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/upstreamad"
	"sealion.dev/servers/supervisor/internal/upstreamgithub"
	"sealion.dev/servers/supervisor/internal/upstreamldap"
	"sealion.dev/servers/supervisor/internal/upstreams"
)

const (
	// resyncInterval bounds how late a missed event, or an upstream that recovered, is acted on.
	resyncInterval = time.Minute
	// retryInterval is the wait after a failed sync.
	retryInterval = 5 * time.Second
	// probeTTL is how long a successful probe stands for its inputs before it is repeated.
	probeTTL = 15 * time.Minute
	// probeTimeout bounds one probe of an upstream.
	probeTimeout = 90 * time.Second
)

// Informers are what the controller watches, all of the Supervisor's namespace.
type Informers struct {
	OIDC            idpinformers.OIDCIdentityProviderInformer
	LDAP            idpinformers.LDAPIdentityProviderInformer
	ActiveDirectory idpinformers.ActiveDirectoryIdentityProviderInformer
	GitHub          idpinformers.GitHubIdentityProviderInformer
	Secrets         corev1informers.SecretInformer
	ConfigMaps      corev1informers.ConfigMapInformer
}

// probes reach the upstreams; tests replace them.
type probes struct {
	oidc            func(ctx context.Context, issuer string, client *http.Client) error
	ldap            func(ctx context.Context, p *upstreamldap.Provider) (upstreamldap.Protocol, error)
	activeDirectory func(ctx context.Context, cfg upstreamldap.Config, generation int64) (*upstreamldap.Provider, []metav1.Condition)
	github          func(ctx context.Context, address string, caBundle []byte) error
}

var realProbes = probes{
	oidc: discover,
	ldap: func(ctx context.Context, p *upstreamldap.Provider) (upstreamldap.Protocol, error) {
		return p.Probe(ctx)
	},
	activeDirectory: upstreamad.Connect,
	github:          upstreamgithub.CheckConnection,
}

// Controller is the upstream identity provider controller. Make one with New and start it with
// Run.
type Controller struct {
	namespace  string
	supervisor supervisorclientset.Interface
	registry   *upstreams.Registry
	oidc       idplisters.OIDCIdentityProviderNamespaceLister
	ldap       idplisters.LDAPIdentityProviderNamespaceLister
	ad         idplisters.ActiveDirectoryIdentityProviderNamespaceLister
	github     idplisters.GitHubIdentityProviderNamespaceLister
	secrets    corev1listers.SecretNamespaceLister
	tls        cabundle.Listers
	synced     []cache.InformerSynced
	loops      []*loop
	probes     probes
	now        func() time.Time

	// One probe cache per kind, each used by its kind's loop only.
	oidcProbes   probeCache[*http.Client]
	ldapProbes   probeCache[ldapResult]
	adProbes     probeCache[adResult]
	githubProbes probeCache[metav1.Condition]
}

// New returns the controller for the identity providers of namespace; it publishes the Ready
// ones to registry. supervisor must speak the configured API group suffix (see
// groupsuffix.Transport).
func New(namespace string, supervisor supervisorclientset.Interface, informers Informers, registry *upstreams.Registry) *Controller {
	c := &Controller{
		namespace:  namespace,
		supervisor: supervisor,
		registry:   registry,
		oidc:       informers.OIDC.Lister().OIDCIdentityProviders(namespace),
		ldap:       informers.LDAP.Lister().LDAPIdentityProviders(namespace),
		ad:         informers.ActiveDirectory.Lister().ActiveDirectoryIdentityProviders(namespace),
		github:     informers.GitHub.Lister().GitHubIdentityProviders(namespace),
		secrets:    informers.Secrets.Lister().Secrets(namespace),
		tls: cabundle.Listers{
			Namespace:  namespace,
			Secrets:    informers.Secrets.Lister(),
			ConfigMaps: informers.ConfigMaps.Lister(),
		},
		probes: realProbes,
		now:    time.Now,
	}
	kinds := []struct {
		name     string
		informer cache.SharedIndexInformer
		sync     func(context.Context) error
	}{
		{"OIDCIdentityProvider", informers.OIDC.Informer(), c.syncOIDC},
		{"LDAPIdentityProvider", informers.LDAP.Informer(), c.syncLDAP},
		{"ActiveDirectoryIdentityProvider", informers.ActiveDirectory.Informer(), c.syncActiveDirectory},
		{"GitHubIdentityProvider", informers.GitHub.Informer(), c.syncGitHub},
	}
	for _, k := range kinds {
		l := &loop{kind: k.name, sync: k.sync, trigger: make(chan struct{}, 1)}
		c.loops = append(c.loops, l)
		_, _ = k.informer.AddEventHandler(pokeOn(l)) // fails only on a stopped informer, which then never syncs
		c.synced = append(c.synced, k.informer.HasSynced)
	}
	pokeAll := pokeOn(c.loops...)
	// Session storage Secrets come and go with every login; they configure no identity provider.
	_, _ = informers.Secrets.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			s, ok := obj.(*corev1.Secret)
			return !ok || !strings.HasPrefix(string(s.Type), "storage.pinniped.dev/")
		},
		Handler: pokeAll,
	})
	_, _ = informers.ConfigMaps.Informer().AddEventHandler(pokeAll)
	c.synced = append(c.synced, informers.Secrets.Informer().HasSynced, informers.ConfigMaps.Informer().HasSynced)
	return c
}

// Run runs the loop of every kind until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	log := klog.FromContext(ctx).WithName("upstream-idp")
	ctx = klog.NewContext(ctx, log)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	log.Info("controller started")
	var wg sync.WaitGroup
	for _, l := range c.loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.run(ctx)
		}()
	}
	wg.Wait()
}

// loop syncs one kind on every trigger and every resyncInterval.
type loop struct {
	kind    string
	sync    func(context.Context) error
	trigger chan struct{}
}

func pokeOn(loops ...*loop) cache.ResourceEventHandler {
	poke := func() {
		for _, l := range loops {
			select {
			case l.trigger <- struct{}{}:
			default:
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
}

func (l *loop) run(ctx context.Context) {
	log := klog.FromContext(ctx)
	for {
		wait := resyncInterval
		if err := l.sync(ctx); err != nil {
			log.Error(err, "sync failed; will retry", "kind", l.kind)
			wait = retryInterval
		}
		select {
		case <-ctx.Done():
			return
		case <-l.trigger:
		case <-time.After(wait):
		}
	}
}

// secret returns the Secret name of the namespace, or nil when it does not exist.
func (c *Controller) secret(name string) (*corev1.Secret, error) {
	s, err := c.secrets.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", c.namespace, name, err)
	}
	return s, nil
}

// caBundle resolves a TLS spec: a PEM bundle, nil for the system roots, or a *cabundle.Error.
func (c *Controller) caBundle(spec *idpv1alpha1.TLSSpec) ([]byte, error) {
	if spec == nil {
		return nil, nil
	}
	var source *cabundle.Source
	if s := spec.CertificateAuthorityDataSource; s != nil {
		source = &cabundle.Source{Kind: string(s.Kind), Name: s.Name, Key: s.Key}
	}
	return cabundle.Resolve(spec.CertificateAuthorityData, source, c.tls)
}

// fingerprint identifies what a probe depends on: the spec (by generation), the Secret (by
// resourceVersion) and the CA bundle.
func fingerprint(generation int64, secret *corev1.Secret, caBundle []byte) string {
	rv := "none"
	if secret != nil {
		rv = secret.ResourceVersion
	}
	sum := sha256.Sum256(caBundle)
	return fmt.Sprintf("%d/%s/%s", generation, rv, hex.EncodeToString(sum[:]))
}

// probeCache remembers the last successful probe of each provider with its fingerprint, so that
// resyncs do not reach the upstream again for unchanged inputs. Failures are not remembered:
// they are retried on every sync.
type probeCache[T any] struct {
	entries map[types.UID]probeEntry[T]
}

type probeEntry[T any] struct {
	fingerprint string
	at          time.Time
	result      T
}

// get returns the result stored for uid under fingerprint, and whether it is younger than
// probeTTL.
func (pc *probeCache[T]) get(uid types.UID, fingerprint string, now time.Time) (result T, fresh, found bool) {
	e, ok := pc.entries[uid]
	if !ok || e.fingerprint != fingerprint {
		return result, false, false
	}
	return e.result, now.Sub(e.at) < probeTTL, true
}

func (pc *probeCache[T]) put(uid types.UID, fingerprint string, now time.Time, result T) {
	if pc.entries == nil {
		pc.entries = map[types.UID]probeEntry[T]{}
	}
	pc.entries[uid] = probeEntry[T]{fingerprint: fingerprint, at: now, result: result}
}

// retain forgets the providers that no longer exist.
func (pc *probeCache[T]) retain(uids map[types.UID]bool) {
	for uid := range pc.entries {
		if !uids[uid] {
			delete(pc.entries, uid)
		}
	}
}

// allTrue reports whether every condition is True, i.e. the provider is Ready.
func allTrue(conds []metav1.Condition) bool {
	return upstreamldap.PhaseOf(conds) == idpv1alpha1.PhaseReady
}

// writeStatus updates a provider's status when conds or their phase differ from old, the stored
// status. withStatus returns a copy of the provider carrying a status; update is the client's
// UpdateStatus.
func writeStatus[T any](ctx context.Context, kind, name string, old idpv1alpha1.IdentityProviderStatus, conds []metav1.Condition,
	withStatus func(idpv1alpha1.IdentityProviderStatus) T, update func(context.Context, T, metav1.UpdateOptions) (T, error),
) error {
	status := *old.DeepCopy()
	changed := false
	for _, cond := range conds {
		if meta.SetStatusCondition(&status.Conditions, cond) {
			changed = true
		}
	}
	if phase := upstreamldap.PhaseOf(conds); phase != status.Phase {
		status.Phase, changed = phase, true
	}
	if !changed {
		return nil
	}
	_, err := update(ctx, withStatus(status), metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// Our cache is behind (another replica, our own last write, a deletion): the event
		// that brings it up to date triggers the next sync.
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of %s %s: %w", kind, name, err)
	}
	return nil
}
