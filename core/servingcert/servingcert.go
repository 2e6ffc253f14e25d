// Package servingcert creates, stores, rotates and serves the TLS certificate of an aggregated
// API server, and keeps the caBundle of its APIService objects current.
//
// The controller keeps a private CA and a serving certificate for <service>.<namespace>.svc in
// one Secret (keys SecretKeyCACertificate, SecretKeyCAPrivateKey, SecretKeyTLSCertificateChain,
// SecretKeyTLSPrivateKey). It replaces the Secret's content when it is missing, unreadable, not
// for this Service, or within RenewBefore of expiry. Every replica serves what the Secret holds,
// never a certificate of its own, so replicas agree; a replica that may not write (not the
// leader) retries until the leader's Secret shows up through the informer.
package servingcert

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	aggregatorinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	apiregistrationlisters "k8s.io/kube-aggregator/pkg/client/listers/apiregistration/v1"
	"k8s.io/utils/clock"

	"sealion.dev/core/certauthority"
	"sealion.dev/core/controller"
)

// Keys of the Secret's data.
const (
	SecretKeyCACertificate       = "caCertificate"
	SecretKeyCAPrivateKey        = "caCertificatePrivateKey"
	SecretKeyTLSCertificateChain = "tlsCertificateChain"
	SecretKeyTLSPrivateKey       = "tlsPrivateKey"
)

// Defaults for Config.
const (
	DefaultSecretName  = "pinniped-concierge-api-tls-serving-certificate"
	DefaultDuration    = 365 * 24 * time.Hour
	DefaultRenewBefore = DefaultDuration - 273*24*time.Hour // renew about 9 months after issuance
	// DefaultResyncPeriod bounds how long a change the informers miss goes unnoticed.
	DefaultResyncPeriod = 10 * time.Minute
)

// Config says which certificate to maintain and where.
type Config struct {
	// Namespace holds the Secret and the Service. Required.
	Namespace string
	// ServiceName is the Service in front of the API server; the certificate is for
	// <ServiceName>.<Namespace>.svc, the name the kube-aggregator dials. Required.
	ServiceName string
	// SecretName is the Secret holding the CA and certificate. Default DefaultSecretName.
	SecretName string
	// SecretLabels are set on a Secret this controller creates.
	SecretLabels map[string]string
	// APIServiceNames are the APIService objects whose spec.caBundle is kept equal to the CA,
	// e.g. "v1alpha1.login.concierge.pinniped.dev". A missing one is logged and retried.
	APIServiceNames []string
	// Duration is the validity of a new CA and serving certificate. Default DefaultDuration.
	Duration time.Duration
	// RenewBefore is how long before expiry both are replaced. Default DefaultRenewBefore. Note
	// that Pinniped's config field api.servingCertificate.renewBeforeSeconds is the certificate
	// age at which to renew, that is Duration minus RenewBefore.
	RenewBefore time.Duration
	// ResyncPeriod is the longest time between two checks. Default DefaultResyncPeriod.
	ResyncPeriod time.Duration
	// Clock defaults to the real clock; for tests.
	Clock clock.WithTicker
}

func (c Config) withDefaults() (Config, error) {
	if c.Namespace == "" || c.ServiceName == "" {
		return c, errors.New("servingcert: Namespace and ServiceName are required")
	}
	if c.SecretName == "" {
		c.SecretName = DefaultSecretName
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.RenewBefore == 0 {
		c.RenewBefore = DefaultRenewBefore
	}
	if c.ResyncPeriod == 0 {
		c.ResyncPeriod = DefaultResyncPeriod
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Duration < 0 || c.RenewBefore < 0 || c.RenewBefore >= c.Duration {
		// Otherwise every new certificate would be due for renewal at once.
		return c, fmt.Errorf("servingcert: need 0 <= RenewBefore (%s) < Duration (%s)", c.RenewBefore, c.Duration)
	}
	return c, nil
}

// hostname is the DNS name of the Service, which the certificate must be valid for.
func (c Config) hostname() string { return c.ServiceName + "." + c.Namespace + ".svc" }

// Controller maintains the serving certificate. Make one with New and start it with Run.
type Controller struct {
	cfg        Config
	kube       kubernetes.Interface
	aggregator aggregatorclient.Interface
	provider   *Provider
	// loop is a singleton controller: every event leads to the same full check.
	loop *controller.Controller

	secretInformers     informers.SharedInformerFactory
	secrets             corelisters.SecretNamespaceLister
	apiServiceInformers aggregatorinformers.SharedInformerFactory
	apiServices         apiregistrationlisters.APIServiceLister

	// written is the controller's own last write, until the informer's cache shows it. Only the
	// singleton sync touches it, and it never runs concurrently with itself.
	written *write
}

// write is a Secret the controller wrote and the resourceVersion of the one it replaced ("" when
// it created it). Until the cache has seen the write, a sync reading the cache would serve the old
// certificate again (the APIServices already trust the new CA) and renew a second time.
type write struct {
	secret   *corev1.Secret
	replaced string
}

// newest is cached, or the controller's own write while the cache still shows what that write
// replaced. Once the cache shows anything else, the cache is the truth again.
func (c *Controller) newest(cached *corev1.Secret) *corev1.Secret {
	if c.written == nil {
		return cached
	}
	if cached == nil && c.written.replaced == "" || cached != nil && cached.ResourceVersion == c.written.replaced {
		return c.written.secret
	}
	c.written = nil
	return cached
}

// New makes a controller. aggregator may be nil when cfg.APIServiceNames is empty.
func New(cfg Config, kube kubernetes.Interface, aggregator aggregatorclient.Interface) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if aggregator == nil && len(cfg.APIServiceNames) > 0 {
		return nil, errors.New("servingcert: an aggregator client is required to update APIServiceNames")
	}
	c := &Controller{
		cfg:        cfg,
		kube:       kube,
		aggregator: aggregator,
		provider:   newProvider("servingcert/" + cfg.Namespace + "/" + cfg.SecretName),
	}
	c.loop = controller.New(controller.Options{
		Name:       "servingcert",
		Sync:       c.reconcile,
		Resync:     cfg.ResyncPeriod,
		MinBackoff: 200 * time.Millisecond,
		MaxBackoff: time.Minute,
		Clock:      cfg.Clock,
	})
	named := func(wanted func(name string) bool) controller.Trigger {
		// Fake clientsets ignore field selectors, so filter here as well.
		return controller.Only(func(obj any) bool {
			m, err := meta.Accessor(obj)
			return err == nil && wanted(m.GetName())
		}, controller.AsSingleton)
	}

	c.secretInformers = informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithNamespace(cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", cfg.SecretName).String()
		}))
	secretInformer := c.secretInformers.Core().V1().Secrets()
	c.loop.Watch(secretInformer.Informer(), named(func(n string) bool { return n == cfg.SecretName }))
	c.secrets = secretInformer.Lister().Secrets(cfg.Namespace)

	if len(cfg.APIServiceNames) > 0 {
		wanted := make(map[string]bool, len(cfg.APIServiceNames))
		for _, n := range cfg.APIServiceNames {
			wanted[n] = true
		}
		c.apiServiceInformers = aggregatorinformers.NewSharedInformerFactory(aggregator, 0)
		apiServiceInformer := c.apiServiceInformers.Apiregistration().V1().APIServices()
		c.loop.Watch(apiServiceInformer.Informer(), named(func(n string) bool { return wanted[n] }))
		c.apiServices = apiServiceInformer.Lister()
	}
	return c, nil
}

// Provider returns what to give the HTTPS server as its serving certificate.
func (c *Controller) Provider() *Provider { return c.provider }

// Run maintains the certificate until ctx is done; call it once. It logs through
// klog.FromContext(ctx). It fails only when ctx ends before the informers have synced.
func (c *Controller) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("secret", klog.KRef(c.cfg.Namespace, c.cfg.SecretName)))
	c.secretInformers.Start(ctx.Done())
	defer c.secretInformers.Shutdown()
	synced := []cache.InformerSynced{c.secretInformers.Core().V1().Secrets().Informer().HasSynced}
	if c.apiServiceInformers != nil {
		c.apiServiceInformers.Start(ctx.Done())
		defer c.apiServiceInformers.Shutdown()
		synced = append(synced, c.apiServiceInformers.Apiregistration().V1().APIServices().Informer().HasSynced)
	}
	c.loop.Run(ctx)
	for _, hasSynced := range synced {
		if !hasSynced() {
			return fmt.Errorf("servingcert: informer caches did not sync: %w", ctx.Err())
		}
	}
	return nil
}

// reconcile is the controller's sync. The resync checks every ResyncPeriod; a renewal due
// before the next resync gets a check of its own at its time.
func (c *Controller) reconcile(ctx context.Context, _ string) error {
	next, err := c.sync(ctx)
	if err == nil && next < c.cfg.ResyncPeriod {
		c.loop.EnqueueAfter(controller.Singleton, next)
	}
	return err
}

// sync makes sure the Secret holds a usable certificate, serves it, and updates the
// APIServices. It returns how long until the next check is needed.
func (c *Controller) sync(ctx context.Context) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	now := c.cfg.Clock.Now()

	secret, err := c.secrets.Get(c.cfg.SecretName)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("get Secret %s/%s from cache: %w", c.cfg.Namespace, c.cfg.SecretName, err)
	}
	secret = c.newest(secret)
	var current *stored
	if secret != nil {
		current, err = c.parse(secret, now)
		switch {
		case err != nil:
			logger.Info("Replacing unusable serving certificate", "reason", err.Error())
		case !now.Before(current.renewAt):
			logger.Info("Renewing serving certificate", "notAfter", current.notAfter, "renewAt", current.renewAt)
		}
	}
	if current != nil {
		// Still valid: serve it even if renewing fails below, e.g. because we are not the leader.
		c.serve(current)
	}
	if current == nil || !now.Before(current.renewAt) {
		if current, err = c.issue(ctx, secret); err != nil {
			return 0, err
		}
		c.serve(current)
	}

	if err := c.updateAPIServices(ctx, current.data[SecretKeyCACertificate]); err != nil {
		return 0, err
	}
	return min(current.renewAt.Sub(now), c.cfg.ResyncPeriod), nil
}

func (c *Controller) serve(s *stored) {
	c.provider.set(s.data[SecretKeyTLSCertificateChain], s.data[SecretKeyTLSPrivateKey])
}

// stored is the validated content of the Secret.
type stored struct {
	data     map[string][]byte
	notAfter time.Time // of the CA or the leaf, whichever expires first
	renewAt  time.Time
}

// parse checks that the Secret holds a CA and a serving certificate issued by it, currently
// valid for the Service's hostname.
func (c *Controller) parse(secret *corev1.Secret, now time.Time) (*stored, error) {
	for _, key := range []string{SecretKeyCACertificate, SecretKeyCAPrivateKey, SecretKeyTLSCertificateChain, SecretKeyTLSPrivateKey} {
		if len(secret.Data[key]) == 0 {
			return nil, fmt.Errorf("key %q is missing", key)
		}
	}
	ca, err := certauthority.Load(secret.Data[SecretKeyCACertificate], secret.Data[SecretKeyCAPrivateKey])
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(secret.Data[SecretKeyTLSCertificateChain], secret.Data[SecretKeyTLSPrivateKey])
	if err != nil {
		return nil, fmt.Errorf("load serving key pair: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	if _, err := pair.Leaf.Verify(x509.VerifyOptions{
		DNSName:     c.cfg.hostname(),
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return nil, fmt.Errorf("verify serving certificate: %w", err)
	}
	notAfter := ca.Certificate().NotAfter
	if pair.Leaf.NotAfter.Before(notAfter) {
		notAfter = pair.Leaf.NotAfter
	}
	return &stored{data: secret.Data, notAfter: notAfter, renewAt: notAfter.Add(-c.cfg.RenewBefore)}, nil
}

// issue makes a new CA and serving certificate and writes them to the Secret, creating it if
// old is nil.
func (c *Controller) issue(ctx context.Context, old *corev1.Secret) (*stored, error) {
	host := c.cfg.hostname()
	ca, err := certauthority.New(host+" CA", c.cfg.Duration, certauthority.WithClock(c.cfg.Clock.Now))
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.IssueServingCert(host, []string{host}, nil, c.cfg.Duration)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{
		SecretKeyCACertificate:       ca.Bundle(),
		SecretKeyCAPrivateKey:        ca.PrivateKeyPEM(),
		SecretKeyTLSCertificateChain: certPEM,
		SecretKeyTLSPrivateKey:       keyPEM,
	}
	secrets := c.kube.CoreV1().Secrets(c.cfg.Namespace)
	var written *corev1.Secret
	replaced := ""
	if old == nil {
		written, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: c.cfg.SecretName, Namespace: c.cfg.Namespace, Labels: c.cfg.SecretLabels},
			Type:       corev1.SecretTypeOpaque,
			Data:       data,
		}, metav1.CreateOptions{})
	} else {
		// Update carries old's resourceVersion, so a concurrent writer makes this fail and retry
		// rather than be overwritten.
		updated := old.DeepCopy()
		updated.Data = data
		replaced = old.ResourceVersion
		written, err = secrets.Update(ctx, updated, metav1.UpdateOptions{})
	}
	if err != nil {
		// What we wrote before may be gone (deleted, or replaced by another writer): the next
		// sync reads the cache alone.
		c.written = nil
		return nil, fmt.Errorf("write Secret %s/%s: %w", c.cfg.Namespace, c.cfg.SecretName, err)
	}
	c.written = &write{secret: written, replaced: replaced}
	klog.FromContext(ctx).Info("Stored new serving certificate", "hostname", host, "notAfter", ca.Certificate().NotAfter)
	// The leaf was signed after the CA, so the CA expires first.
	notAfter := ca.Certificate().NotAfter
	return &stored{data: data, notAfter: notAfter, renewAt: notAfter.Add(-c.cfg.RenewBefore)}, nil
}

// updateAPIServices sets spec.caBundle of every configured APIService to caPEM.
func (c *Controller) updateAPIServices(ctx context.Context, caPEM []byte) error {
	var errs []error
	for _, name := range c.cfg.APIServiceNames {
		apiService, err := c.apiServices.Get(name)
		if apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("APIService %q not found", name))
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("get APIService %q from cache: %w", name, err))
			continue
		}
		if bytes.Equal(apiService.Spec.CABundle, caPEM) {
			continue
		}
		// A merge patch of the one field leaves the rest of the object to its owner (the
		// install manifests) and cannot conflict with their edits.
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"caBundle": caPEM}})
		if err != nil {
			return fmt.Errorf("encode caBundle patch: %w", err)
		}
		if _, err := c.aggregator.ApiregistrationV1().APIServices().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("patch caBundle of APIService %q: %w", name, err))
			continue
		}
		klog.FromContext(ctx).Info("Updated caBundle", "apiService", name)
	}
	return errors.Join(errs...)
}
