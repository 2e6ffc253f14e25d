// Package impersonationproxy runs the ImpersonationProxy strategy: from the CredentialIssuer's
// spec.impersonationProxy it decides whether the impersonation proxy runs (mode auto: only where
// no control-plane node is visible), starts or stops its listener, keeps the Service that exposes
// it, the signer CA whose client certificates only the proxy accepts, and the serving CA and
// certificate for the address clients use (or, with spec.impersonationProxy.tls, the certificate
// of a Secret someone else manages), and records the outcome as the ImpersonationProxy strategy
// in the CredentialIssuer's status.
//
// Every replica runs the controller. CAs and certificates live in Secrets, which are the source of
// truth: a replica that loses a race to write one loads the winner's on its next sync, so all
// replicas sign and serve with the same keys.
package impersonationproxy

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	klogv2 "k8s.io/klog/v2"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	"sealion.dev/core/controller"
	configinformers "sealion.dev/core/generated/concierge/informers/externalversions/config/v1alpha1"
	configlisters "sealion.dev/core/generated/concierge/listers/config/v1alpha1"
	"sealion.dev/servers/internal/tlsprofile"
)

// resyncInterval bounds how late a CA rotation or a missed event is acted on, and how long a
// failing sync waits at most before its next try.
const resyncInterval = 30 * time.Second

// Config names what the controller manages.
type Config struct {
	// Namespace is the Concierge's namespace, where the Services and Secrets live.
	Namespace            string
	CredentialIssuerName string
	// DefaultSpec is used while the CredentialIssuer does not exist.
	DefaultSpec             configv1alpha1.ImpersonationProxySpec
	LoadBalancerServiceName string
	ClusterIPServiceName    string
	SignerSecretName        string
	ServingCASecretName     string
	ServingCertSecretName   string
	// LegacySecretName is the token Secret older installs kept for the proxy's ServiceAccount,
	// deleted when found.
	LegacySecretName string
	// Selector selects the Concierge pods behind the Services; Labels go on created objects.
	Selector map[string]string
	Labels   map[string]string
	// Address is where the proxy listens (":8444"); Port is the port the Services target.
	Address string
	Port    int32
	// TLS is the proxy's TLS profile.
	TLS tlsprofile.Profile
}

// Signer takes the signer CA; a *dynamicca.Signer.
type Signer interface {
	Set(certPEM, keyPEM []byte) error
	Clear()
}

// StrategyWriter records the strategy; a *credentialissuer.Updater.
type StrategyWriter interface {
	SetStrategy(ctx context.Context, s configv1alpha1.CredentialIssuerStrategy) error
}

// Informers are what the controller watches. Services and Secrets are those of the namespace.
type Informers struct {
	CredentialIssuers configinformers.CredentialIssuerInformer
	Services          corev1informers.ServiceInformer
	Secrets           corev1informers.SecretInformer
}

// Controller is the ImpersonationProxy strategy.
type Controller struct {
	cfg               Config
	kube              kubernetes.Interface
	credentialIssuers configlisters.CredentialIssuerLister
	services          corev1listers.ServiceNamespaceLister
	secrets           corev1listers.SecretNamespaceLister
	loop              *controller.Controller
	signer            Signer
	status            StrategyWriter
	listener          *listener
	cert              *servingCert
	now               func() time.Time

	// controlPlane caches the one live look at the nodes that mode auto needs.
	controlPlaneOnce sync.Mutex
	controlPlane     *bool
}

// New returns the controller; handler is the proxy it serves.
func New(cfg Config, kube kubernetes.Interface, informers Informers, handler http.Handler, signer Signer, status StrategyWriter) *Controller {
	cert := &servingCert{}
	c := &Controller{
		cfg:               cfg,
		kube:              kube,
		credentialIssuers: informers.CredentialIssuers.Lister(),
		services:          informers.Services.Lister().Services(cfg.Namespace),
		secrets:           informers.Secrets.Lister().Secrets(cfg.Namespace),
		signer:            signer,
		status:            status,
		cert:              cert,
		listener:          &listener{address: cfg.Address, handler: handler, cert: cert, tls: cfg.TLS, listen: net.Listen, drainTimeout: drainTimeout},
		now:               time.Now,
	}
	// The proxy is one thing reconciled as a whole, so every event asks for the same sync.
	c.loop = controller.New(controller.Options{
		Name:       "impersonation-proxy",
		Sync:       func(ctx context.Context, _ string) error { return c.sync(ctx) },
		Resync:     resyncInterval,
		MaxBackoff: resyncInterval,
	})
	for _, inf := range []cache.SharedIndexInformer{informers.CredentialIssuers.Informer(), informers.Services.Informer(), informers.Secrets.Informer()} {
		c.loop.Watch(inf, controller.AsSingleton)
	}
	return c
}

// Run syncs on every change and every resyncInterval until ctx ends, then stops the listener
// gracefully: the Concierge is shutting down.
func (c *Controller) Run(ctx context.Context) {
	defer c.listener.stop(ctx, shutdownDelay)
	c.loop.Run(ctx)
}

// sync brings everything in line with the spec, records the strategy, and deletes the legacy
// token Secret.
func (c *Controller) sync(ctx context.Context) error {
	legacyErr := c.deleteLegacySecret(ctx)
	return errors.Join(c.reconcile(ctx), legacyErr)
}

// deleteLegacySecret deletes the token Secret of the proxy's ServiceAccount that installs kept
// before tokens came from the TokenRequest API: a token that never expires, no longer used.
func (c *Controller) deleteLegacySecret(ctx context.Context) error {
	name := c.cfg.LegacySecretName
	if name == "" {
		return nil
	}
	if _, err := c.secrets.Get(name); apierrors.IsNotFound(err) {
		return nil
	}
	err := c.kube.CoreV1().Secrets(c.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the legacy impersonation proxy token Secret %s/%s: %w", c.cfg.Namespace, name, err)
	}
	return nil
}

// reconcile brings everything in line with the spec and records the strategy.
func (c *Controller) reconcile(ctx context.Context) error {
	spec := c.spec()
	enabled, err := c.enabled(ctx, spec.Mode)
	if err != nil {
		return c.setupFailed(ctx, err)
	}
	if !enabled {
		return c.disable(ctx, spec.Mode)
	}
	if err := validate(spec); err != nil {
		c.listener.stop(ctx, 0)
		return c.setupFailed(ctx, err)
	}
	signer, err := c.ensureCA(ctx, c.cfg.SignerSecretName, SignerCommonName, SignerTTL, signerRenewBefore)
	if err != nil {
		return c.setupFailed(ctx, err)
	}
	if err := c.signer.Set(signer.Bundle(), signer.PrivateKeyPEM()); err != nil {
		return c.setupFailed(ctx, err)
	}
	if err := c.listener.start(ctx); err != nil {
		return c.setupFailed(ctx, err)
	}
	address, err := c.ensureServices(ctx, spec)
	if err != nil {
		return c.setupFailed(ctx, err)
	}
	if spec.ExternalEndpoint != "" {
		address = spec.ExternalEndpoint
	}
	// An external certificate does not depend on the address, so a bad one shows even while the
	// load balancer is pending.
	var caPEM []byte
	if spec.TLS != nil {
		if caPEM, err = c.useExternalServingCert(ctx, *spec.TLS); err != nil {
			// Serving nothing beats serving a certificate its owner took away or broke.
			c.cert.clear()
			return c.setupFailed(ctx, err)
		}
	}
	if address == "" {
		return c.status.SetStrategy(ctx, configv1alpha1.CredentialIssuerStrategy{
			Type: configv1alpha1.StrategyTypeImpersonationProxy, Status: configv1alpha1.StrategyStatusError,
			Reason:  configv1alpha1.StrategyReasonPending,
			Message: "waiting for the load balancer Service to be assigned an IP address or hostname",
		})
	}
	if spec.TLS == nil {
		if caPEM, err = c.useGeneratedServingCert(ctx, hostOf(address)); err != nil {
			return c.setupFailed(ctx, err)
		}
	}
	return c.status.SetStrategy(ctx, listening(address, caPEM))
}

// useGeneratedServingCert serves a certificate for host from the Concierge's own serving CA and
// returns that CA.
func (c *Controller) useGeneratedServingCert(ctx context.Context, host string) ([]byte, error) {
	servingCA, err := c.ensureCA(ctx, c.cfg.ServingCASecretName, servingCACommonName, servingCATTL, servingCARenewBefore)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := c.ensureServingCert(ctx, servingCA, host)
	if err != nil {
		return nil, err
	}
	if _, err := c.cert.set(certPEM, keyPEM); err != nil {
		return nil, err
	}
	return servingCA.Bundle(), nil
}

func listening(address string, caPEM []byte) configv1alpha1.CredentialIssuerStrategy {
	return configv1alpha1.CredentialIssuerStrategy{
		Type: configv1alpha1.StrategyTypeImpersonationProxy, Status: configv1alpha1.StrategyStatusSuccess,
		Reason: configv1alpha1.StrategyReasonListening, Message: "impersonation proxy is ready to accept client connections",
		Frontend: &configv1alpha1.CredentialIssuerFrontend{
			Type: configv1alpha1.FrontendTypeImpersonationProxy,
			ImpersonationProxyInfo: &configv1alpha1.ImpersonationProxyInfo{
				Endpoint:                 "https://" + address,
				CertificateAuthorityData: base64.StdEncoding.EncodeToString(caPEM),
			},
		},
	}
}

// spec is the CredentialIssuer's impersonation proxy spec; the default while it is missing, and
// mode disabled (the API default) when the field is omitted.
func (c *Controller) spec() configv1alpha1.ImpersonationProxySpec {
	ci, err := c.credentialIssuers.Get(c.cfg.CredentialIssuerName)
	if err != nil {
		return *c.cfg.DefaultSpec.DeepCopy()
	}
	if ci.Spec.ImpersonationProxy == nil {
		return configv1alpha1.ImpersonationProxySpec{Mode: configv1alpha1.ImpersonationProxyModeDisabled}
	}
	return *ci.Spec.ImpersonationProxy.DeepCopy()
}

// enabled decides whether the proxy runs in mode.
func (c *Controller) enabled(ctx context.Context, mode configv1alpha1.ImpersonationProxyMode) (bool, error) {
	switch mode {
	case configv1alpha1.ImpersonationProxyModeEnabled:
		return true, nil
	case configv1alpha1.ImpersonationProxyModeDisabled, "":
		return false, nil
	case configv1alpha1.ImpersonationProxyModeAuto:
		visible, err := c.controlPlaneVisible(ctx)
		return !visible, err
	default:
		return false, fmt.Errorf("unknown impersonation proxy mode %q", mode)
	}
}

// controlPlaneVisible lists the nodes once per process: whether the control plane runs in the
// cluster does not change while it lives.
func (c *Controller) controlPlaneVisible(ctx context.Context) (bool, error) {
	c.controlPlaneOnce.Lock()
	defer c.controlPlaneOnce.Unlock()
	if c.controlPlane != nil {
		return *c.controlPlane, nil
	}
	nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("listing nodes to look for a control plane: %w", err)
	}
	if len(nodes.Items) == 0 {
		return false, errors.New("no nodes found: cannot tell whether the control plane runs in the cluster")
	}
	visible := controlPlaneVisible(nodes.Items)
	c.controlPlane = &visible
	return visible, nil
}

// disable stops the proxy and removes what it exposed; the CAs stay for a later enable.
func (c *Controller) disable(ctx context.Context, mode configv1alpha1.ImpersonationProxyMode) error {
	c.listener.stop(ctx, 0)
	c.signer.Clear()
	c.cert.clear()
	err := errors.Join(c.deleteService(ctx, c.cfg.LoadBalancerServiceName), c.deleteService(ctx, c.cfg.ClusterIPServiceName))
	if err != nil {
		return err
	}
	message := "the impersonation proxy was disabled by configuration"
	if mode == configv1alpha1.ImpersonationProxyModeAuto {
		message = "the impersonation proxy is disabled automatically: the cluster's control-plane nodes are visible, so its signing key can be used instead"
	}
	return c.status.SetStrategy(ctx, configv1alpha1.CredentialIssuerStrategy{
		Type: configv1alpha1.StrategyTypeImpersonationProxy, Status: configv1alpha1.StrategyStatusError,
		Reason: configv1alpha1.StrategyReasonDisabled, Message: message,
	})
}

// setupFailed records err as ErrorDuringSetup and returns it, so that the sync is retried.
func (c *Controller) setupFailed(ctx context.Context, err error) error {
	statusErr := c.status.SetStrategy(ctx, configv1alpha1.CredentialIssuerStrategy{
		Type: configv1alpha1.StrategyTypeImpersonationProxy, Status: configv1alpha1.StrategyStatusError,
		Reason: configv1alpha1.StrategyReasonErrorDuringSetup, Message: err.Error(),
	})
	return errors.Join(err, statusErr)
}

// ensureServices keeps the one Service the spec asks for and deletes the other, returning the
// address clients reach it at ("" while pending, or for type None).
func (c *Controller) ensureServices(ctx context.Context, spec configv1alpha1.ImpersonationProxySpec) (string, error) {
	var keep, drop []string
	var svcType corev1.ServiceType
	switch spec.Service.Type {
	case configv1alpha1.ImpersonationProxyServiceTypeLoadBalancer, "":
		keep, drop, svcType = []string{c.cfg.LoadBalancerServiceName}, []string{c.cfg.ClusterIPServiceName}, corev1.ServiceTypeLoadBalancer
	case configv1alpha1.ImpersonationProxyServiceTypeClusterIP:
		keep, drop, svcType = []string{c.cfg.ClusterIPServiceName}, []string{c.cfg.LoadBalancerServiceName}, corev1.ServiceTypeClusterIP
	default:
		drop = []string{c.cfg.LoadBalancerServiceName, c.cfg.ClusterIPServiceName}
	}
	for _, name := range drop {
		if err := c.deleteService(ctx, name); err != nil {
			return "", err
		}
	}
	for _, name := range keep {
		svc, err := c.ensureService(ctx, name, svcType, spec.Service)
		if err != nil {
			return "", err
		}
		return serviceAddress(svc), nil
	}
	return "", nil
}

// validate checks what the CRD schema cannot.
func validate(spec configv1alpha1.ImpersonationProxySpec) error {
	if spec.Service.Type == configv1alpha1.ImpersonationProxyServiceTypeNone && spec.ExternalEndpoint == "" {
		return errors.New("spec.impersonationProxy.externalEndpoint must be set when spec.impersonationProxy.service.type is None")
	}
	if ip := spec.Service.LoadBalancerIP; ip != "" && net.ParseIP(ip) == nil {
		return fmt.Errorf("spec.impersonationProxy.service.loadBalancerIP %q is not an IP address", ip)
	}
	if e := spec.ExternalEndpoint; e != "" && (strings.Contains(e, "/") || hostOf(e) == "") {
		return fmt.Errorf("spec.impersonationProxy.externalEndpoint %q must be a host or host:port", e)
	}
	if spec.TLS != nil && spec.TLS.SecretName == "" {
		return errors.New("spec.impersonationProxy.tls.secretName must be set when spec.impersonationProxy.tls is")
	}
	return nil
}

// hostOf strips an optional port from host[:port].
func hostOf(address string) string {
	if host, _, err := net.SplitHostPort(address); err == nil {
		return host
	}
	return strings.Trim(address, "[]")
}

func logger(ctx context.Context) logr.Logger { return klogv2.FromContext(ctx) }
