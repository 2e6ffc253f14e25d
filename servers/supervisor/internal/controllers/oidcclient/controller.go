// Package oidcclient runs the Supervisor's OIDCClient status controller: a level-triggered loop
// that, on every change to the OIDCClients or the client secret storage Secrets of the
// namespace, checks each client with clientcheck.Validate and writes its conditions, phase and
// totalClientSecrets when they differ from those stored. The token endpoint runs the same check
// itself at each use, so the status is for people and tools, never a gate.
package oidcclient

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/core/controller"
	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	configinformers "sealion.dev/core/generated/supervisor/informers/externalversions/config/v1alpha1"
	configlisters "sealion.dev/core/generated/supervisor/listers/config/v1alpha1"
	"sealion.dev/servers/supervisor/internal/clientcheck"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
)

// Informers are what the controller watches, all of the Supervisor's namespace.
type Informers struct {
	OIDCClients configinformers.OIDCClientInformer
	Secrets     corev1informers.SecretInformer
}

// Controller writes the status of OIDCClients. Make one with New and start it with Run.
type Controller struct {
	*controller.Controller
	supervisor    supervisorclientset.Interface
	clients       configlisters.OIDCClientNamespaceLister
	secrets       corev1listers.SecretNamespaceLister
	minBcryptCost int
}

// New returns the controller of the OIDCClients of namespace. Stored hashes with a bcrypt cost
// below minBcryptCost make a client invalid. supervisor must speak the configured API group
// suffix (see groupsuffix.Transport).
func New(namespace string, supervisor supervisorclientset.Interface, informers Informers, minBcryptCost int) *Controller {
	c := &Controller{
		supervisor:    supervisor,
		clients:       informers.OIDCClients.Lister().OIDCClients(namespace),
		secrets:       informers.Secrets.Lister().Secrets(namespace),
		minBcryptCost: minBcryptCost,
	}
	c.Controller = controller.New(controller.Options{Name: "oidc-client", Sync: c.sync, Keys: c.names})
	c.Watch(informers.OIDCClients.Informer(), controller.ObjectName)
	// A storage Secret is named after its client's UID, not its name; there are few clients.
	c.Watch(informers.Secrets.Informer(), controller.Only(func(obj any) bool {
		s, ok := obj.(*corev1.Secret)
		return ok && s.Type == clientsecrets.SecretType
	}, c.All))
	return c
}

func (c *Controller) names() ([]string, error) {
	clients, err := c.clients.List(labels.Everything())
	names := make([]string, 0, len(clients))
	for _, client := range clients {
		names = append(names, client.Name)
	}
	return names, err
}

// sync checks one OIDCClient and writes its status when it changed.
func (c *Controller) sync(ctx context.Context, name string) error {
	client, err := c.clients.Get(name)
	if apierrors.IsNotFound(err) {
		return nil // deleted: its status went with it
	} else if err != nil {
		return err
	}
	storage, err := c.secrets.Get(clientsecrets.SecretName(client.UID))
	if apierrors.IsNotFound(err) {
		storage = nil
	} else if err != nil {
		return fmt.Errorf("reading the client secrets of OIDCClient %s: %w", client.Name, err)
	}
	return c.writeStatus(ctx, client, clientcheck.Validate(client, storage, c.minBcryptCost))
}

// writeStatus updates client's status when res differs from it. Conditions of types no longer
// reported are kept, except our own AllowedRedirectURIsValid and AllowedPostLogoutRedirectURIsValid,
// which are only there while false, and SessionLifetimesValid, only there with
// spec.sessionLifetimes; all are sorted by type, as upstream Pinniped does.
func (c *Controller) writeStatus(ctx context.Context, client *configv1alpha1.OIDCClient, res clientcheck.Result) error {
	status := *client.Status.DeepCopy()
	meta.RemoveStatusCondition(&status.Conditions, clientcheck.ConditionAllowedRedirectURIsValid)
	meta.RemoveStatusCondition(&status.Conditions, clientcheck.ConditionAllowedPostLogoutRedirectURIsValid)
	meta.RemoveStatusCondition(&status.Conditions, configv1alpha1.ConditionSessionLifetimesValid)
	for _, cond := range res.Conditions {
		meta.SetStatusCondition(&status.Conditions, cond)
	}
	slices.SortStableFunc(status.Conditions, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	status.Phase, status.TotalClientSecrets = res.Phase, res.TotalClientSecrets
	if equality.Semantic.DeepEqual(client.Status, status) {
		return nil
	}
	updated := client.DeepCopy()
	updated.Status = status
	_, err := c.supervisor.ConfigV1alpha1().OIDCClients(client.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
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
