// Package oidcclient runs the Supervisor's OIDCClient status controller: a level-triggered loop
// that, on every change to the OIDCClients or the client secret storage Secrets of the
// namespace, checks each client with clientcheck.Validate and writes its conditions, phase and
// totalClientSecrets when they differ from those stored. The token endpoint runs the same check
// itself at each use, so the status is for people and tools, never a gate.
package oidcclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	configinformers "sealion.dev/core/generated/supervisor/informers/externalversions/config/v1alpha1"
	configlisters "sealion.dev/core/generated/supervisor/listers/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/clientcheck"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
)

const (
	// resyncInterval bounds how late a missed event is acted on.
	resyncInterval = time.Minute
	// retryInterval is the wait after a failed sync.
	retryInterval = 5 * time.Second
)

// Informers are what the controller watches, all of the Supervisor's namespace.
type Informers struct {
	OIDCClients configinformers.OIDCClientInformer
	Secrets     corev1informers.SecretInformer
}

// Controller writes the status of OIDCClients. Make one with New and start it with Run.
type Controller struct {
	namespace     string
	supervisor    supervisorclientset.Interface
	clients       configlisters.OIDCClientNamespaceLister
	secrets       corev1listers.SecretNamespaceLister
	minBcryptCost int
	synced        []cache.InformerSynced
	trigger       chan struct{}
}

// New returns the controller of the OIDCClients of namespace. Stored hashes with a bcrypt cost
// below minBcryptCost make a client invalid. supervisor must speak the configured API group
// suffix (see groupsuffix.Transport).
func New(namespace string, supervisor supervisorclientset.Interface, informers Informers, minBcryptCost int) *Controller {
	c := &Controller{
		namespace:     namespace,
		supervisor:    supervisor,
		clients:       informers.OIDCClients.Lister().OIDCClients(namespace),
		secrets:       informers.Secrets.Lister().Secrets(namespace),
		minBcryptCost: minBcryptCost,
		trigger:       make(chan struct{}, 1),
	}
	poke := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.poke() },
		UpdateFunc: func(any, any) { c.poke() },
		DeleteFunc: func(any) { c.poke() },
	}
	// Event handlers fail only on a stopped informer, which then never syncs.
	_, _ = informers.OIDCClients.Informer().AddEventHandler(poke)
	_, _ = informers.Secrets.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			s, ok := obj.(*corev1.Secret)
			return !ok || s.Type == clientsecrets.SecretType
		},
		Handler: poke,
	})
	c.synced = []cache.InformerSynced{informers.OIDCClients.Informer().HasSynced, informers.Secrets.Informer().HasSynced}
	return c
}

func (c *Controller) poke() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// Run syncs on every change and every resyncInterval until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	log := klog.FromContext(ctx).WithName("oidc-client")
	ctx = klog.NewContext(ctx, log)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	log.Info("controller started")
	for {
		wait := resyncInterval
		if err := c.sync(ctx); err != nil {
			log.Error(err, "sync failed; will retry")
			wait = retryInterval
		}
		select {
		case <-ctx.Done():
			return
		case <-c.trigger:
		case <-time.After(wait):
		}
	}
}

// sync checks every OIDCClient and writes the statuses that changed.
func (c *Controller) sync(ctx context.Context) error {
	clients, err := c.clients.List(labels.Everything())
	if err != nil {
		return err
	}
	var errs []error
	for _, client := range clients {
		storage, err := c.secrets.Get(clientsecrets.SecretName(client.UID))
		if apierrors.IsNotFound(err) {
			storage = nil
		} else if err != nil {
			errs = append(errs, fmt.Errorf("reading the client secrets of OIDCClient %s: %w", client.Name, err))
			continue
		}
		errs = append(errs, c.writeStatus(ctx, client, clientcheck.Validate(client, storage, c.minBcryptCost)))
	}
	return errors.Join(errs...)
}

// writeStatus updates client's status when res differs from it.
func (c *Controller) writeStatus(ctx context.Context, client *configv1alpha1.OIDCClient, res clientcheck.Result) error {
	status := *client.Status.DeepCopy()
	changed := false
	for _, cond := range res.Conditions {
		if meta.SetStatusCondition(&status.Conditions, cond) {
			changed = true
		}
	}
	if status.Phase != res.Phase || status.TotalClientSecrets != res.TotalClientSecrets {
		status.Phase, status.TotalClientSecrets, changed = res.Phase, res.TotalClientSecrets, true
	}
	if !changed {
		return nil
	}
	updated := client.DeepCopy()
	updated.Status = status
	_, err := c.supervisor.ConfigV1alpha1().OIDCClients(c.namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// Our cache is behind (another replica, our own last write, a deletion): the event
		// that brings it up to date triggers the next sync.
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of OIDCClient %s: %w", client.Name, err)
	}
	klog.FromContext(ctx).V(1).Info("updated the status of an OIDCClient", "name", client.Name, "phase", res.Phase)
	return nil
}
