// Package federationdomain runs the FederationDomain controller of the Supervisor. On every change
// to FederationDomains, identity providers or Secrets of its namespace it:
//
//   - validates every FederationDomain, against the others too (unique issuers, one TLS Secret per
//     hostname), resolves its identity providers and compiles and self-tests their CEL transforms;
//   - makes sure each FederationDomain has its key Secrets (the ES256 JWKS and the symmetric
//     keys), owned by it, and the Supervisor has its CSRF cookie key Secret, generating any that
//     is missing or unusable;
//   - publishes the servable FederationDomains, with their keys and usable identity providers, to
//     the issuer Mux, and the TLS certificates of their hostnames to the SNI certificate store;
//   - writes every FederationDomain's conditions, phase and key Secret names to its status.
//
// It is a singleton controller (core/controller): every event asks for one sync of the whole set,
// recomputed from the informers' caches, because the checks span all FederationDomains (unique
// issuers, TLS Secrets per hostname), the issuer Mux and the certificate store are replaced as a
// whole, and there are few FederationDomains. An invalid spec shows up in conditions and is never
// an error of the controller. Every replica runs the controller; Secrets are the source of truth
// for keys, so a replica that loses a race to create one uses the winner's.
package federationdomain

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/controller"
	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	configinformers "sealion.dev/core/generated/supervisor/informers/externalversions/config/v1alpha1"
	idpinformers "sealion.dev/core/generated/supervisor/informers/externalversions/idp/v1alpha1"
	configlisters "sealion.dev/core/generated/supervisor/listers/config/v1alpha1"
	"sealion.dev/core/groupsuffix"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// resyncInterval bounds how late a missed event is acted on.
const resyncInterval = time.Minute

// retryInterval is the wait after a failed sync. It does not grow: one sync covers every
// FederationDomain, so one that fails for good (a foreign Secret in the way of its keys) would
// otherwise slow the retries of a passing failure with any other.
const retryInterval = 5 * time.Second

// Config says where the controller works.
type Config struct {
	// Namespace is the Supervisor's namespace, holding the FederationDomains, identity providers
	// and Secrets it reads.
	Namespace string
	// APIGroupSuffix is the installation's API group suffix.
	APIGroupSuffix string
	// DefaultTLSCertificateSecret names the Secret served when no FederationDomain's hostname
	// matches the TLS client's server name.
	DefaultTLSCertificateSecret string
	// Labels go on the Secrets the controller creates.
	Labels map[string]string
	// DeploymentName is the Supervisor's Deployment, which owns the CSRF cookie key's Secret and
	// names it.
	DeploymentName string
}

// Informers are what the controller watches, all of the Supervisor's namespace.
type Informers struct {
	FederationDomains configinformers.FederationDomainInformer
	// IDPs are the informers of the identity provider objects; each kind takes its own.
	IDPs    idpinformers.Interface
	Secrets corev1informers.SecretInformer
}

// Issuers receives the servable FederationDomains; an *issuer.Mux.
type Issuers interface {
	Set(issuers []*issuer.Issuer) error
}

// Certificates receives the serving certificates; an *sni.Certificates.
type Certificates interface {
	Set(byHost map[string]*tls.Certificate, def *tls.Certificate)
}

// Controller is the FederationDomain controller. Make one with New and start it with Run.
type Controller struct {
	*controller.Controller
	cfg               Config
	fdAPIVersion      string // of owner references, with the configured suffix
	supervisor        supervisorclientset.Interface
	kube              kubernetes.Interface
	federationDomains configlisters.FederationDomainNamespaceLister
	idps              []idpSource
	secrets           corev1listers.SecretNamespaceLister
	validator         validator
	issuers           Issuers
	certs             Certificates
	// deployment is the owner reference to the Supervisor's Deployment (nil outside one), once
	// deploymentRead.
	deployment     *metav1.OwnerReference
	deploymentRead bool
}

// New returns the controller; FederationDomains may refer to the identity provider objects of
// kinds. supervisor must be a client that speaks the configured API group suffix (see
// groupsuffix.Transport).
func New(cfg Config, supervisor supervisorclientset.Interface, kube kubernetes.Interface, kinds []connectors.Kind, informers Informers, issuers Issuers, certs Certificates) (*Controller, error) {
	if err := groupsuffix.Validate(cfg.APIGroupSuffix); err != nil {
		return nil, err
	}
	if cfg.DeploymentName == "" {
		return nil, errors.New("the Supervisor's Deployment name is required: it names the CSRF cookie key's Secret")
	}
	fdGroup, _ := groupsuffix.Replace(configv1alpha1.GroupName, cfg.APIGroupSuffix) // always one of ours
	idpGroup, _ := groupsuffix.Replace(idpv1alpha1.GroupName, cfg.APIGroupSuffix)
	ns := cfg.Namespace
	c := &Controller{
		cfg:               cfg,
		fdAPIVersion:      fdGroup + "/" + configv1alpha1.SchemeGroupVersion.Version,
		supervisor:        supervisor,
		kube:              kube,
		federationDomains: informers.FederationDomains.Lister().FederationDomains(ns),
		secrets:           informers.Secrets.Lister().Secrets(ns),
		// Our clients see the default group, whatever the suffix: the transport maps it back.
		validator: validator{idpGroup: idpv1alpha1.GroupName, idpGroupShown: idpGroup, kinds: kindNames(kinds)},
		issuers:   issuers,
		certs:     certs,
	}
	c.Controller = controller.New(controller.Options{
		Name:   "federation-domain",
		Sync:   func(ctx context.Context, _ string) error { return c.sync(ctx) },
		Resync: resyncInterval, MinBackoff: retryInterval, MaxBackoff: retryInterval,
	})
	c.Watch(informers.FederationDomains.Informer(), controller.AsSingleton)
	for _, kind := range kinds {
		informer := kind.Informer(informers.IDPs)
		c.idps = append(c.idps, idpSource{kind: kind, namespace: ns, objects: informer.GetIndexer()})
		c.Watch(informer, controller.AsSingleton)
	}
	// Session storage Secrets come and go with every login; they matter to no FederationDomain.
	c.Watch(informers.Secrets.Informer(), controller.Only(func(obj any) bool {
		s, ok := obj.(*corev1.Secret)
		return !ok || !strings.HasPrefix(string(s.Type), "storage.pinniped.dev/")
	}, controller.AsSingleton))
	return c, nil
}

// sync validates every FederationDomain, ensures its keys, publishes the servable ones and
// writes their statuses. Failures with one FederationDomain do not hold up the others.
func (c *Controller) sync(ctx context.Context) error {
	fds, err := c.federationDomains.List(labels.Everything())
	if err != nil {
		return err
	}
	slices.SortFunc(fds, func(a, b *configv1alpha1.FederationDomain) int { return strings.Compare(a.Name, b.Name) })
	v := c.validator
	if v.inventory, err = list(c.idps); err != nil {
		return err
	}
	results := v.validate(ctx, fds)

	var errs []error
	var issuers []*issuer.Issuer
	keysGenerated := map[string]time.Time{}
	csrfKey, err := c.ensureCSRFKey(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	for _, r := range results {
		k, err := c.ensureKeys(ctx, r.fd)
		if err != nil {
			errs = append(errs, err)
		}
		if r.servable && k != nil && csrfKey != nil {
			issuers = append(issuers, &issuer.Issuer{
				URL: r.fd.Spec.Issuer, Namespace: r.fd.Namespace, Name: r.fd.Name, UID: r.fd.UID,
				JWKS: k.jwks, TokenSigningKey: k.tokenSigningKey, StateSigningKey: k.stateSigningKey, StateEncryptionKey: k.stateEncryptionKey,
				CSRFKey:           csrfKey,
				IdentityProviders: r.idps,
				Sessions:          r.sessions,
			})
		}
		var secrets configv1alpha1.FederationDomainSecrets
		if k != nil {
			keysGenerated[r.fd.Name] = k.jwksGenerated
			secrets = k.secrets
		} else {
			secrets = r.fd.Status.Secrets // keep what was recorded until the keys are back
		}
		if err := c.writeStatus(ctx, r, secrets); err != nil {
			errs = append(errs, fmt.Errorf("updating the status of FederationDomain %s/%s: %w", r.fd.Namespace, r.fd.Name, err))
		}
	}
	if err := c.issuers.Set(issuers); err != nil {
		errs = append(errs, err)
	}
	c.certs.Set(c.certificates(ctx, results))
	recordKeys(keysGenerated)
	return errors.Join(errs...)
}

// writeStatus updates the status when the conditions, phase or Secrets differ from those stored.
// Conditions of types no longer reported are kept, and all are sorted by type, as upstream
// Pinniped does; our own SessionLifetimesValid goes with spec.sessionLifetimes.
func (c *Controller) writeStatus(ctx context.Context, r *result, secrets configv1alpha1.FederationDomainSecrets) error {
	fd := r.fd
	updated := fd.DeepCopy()
	meta.RemoveStatusCondition(&updated.Status.Conditions, configv1alpha1.ConditionSessionLifetimesValid)
	for _, cond := range r.conditions {
		cond.ObservedGeneration = fd.Generation
		meta.SetStatusCondition(&updated.Status.Conditions, cond)
	}
	sortConditions(updated.Status.Conditions)
	updated.Status.Phase = r.conditions.phase()
	updated.Status.Secrets = secrets
	if equality.Semantic.DeepEqual(fd.Status, updated.Status) {
		return nil
	}
	_, err := c.supervisor.ConfigV1alpha1().FederationDomains(fd.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		// Our cache is behind (another replica, or our own last write): the update event that
		// brings it up to date triggers the next sync.
		return nil
	}
	return err
}
