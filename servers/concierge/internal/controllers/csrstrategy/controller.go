// Package csrstrategy runs the Concierge's CertificateSigningRequest strategy: issuing each client
// certificate through the cluster's kubernetes.io/kube-apiserver-client signer (csrsigner).
//
// The replica that leads probes the signer every ProbeInterval: it issues one certificate for
// ProbeUsername and authenticates to the API server with it, so that a signer that issues
// certificates the API server does not accept (a CA it does not trust for clients) is found too.
// Clients reach the Concierge for these certificates through the API server, with no credential
// (the TokenCredentialRequest API frontend), so the probe first checks that the API server lets an
// anonymous TokenCredentialRequest through: managed clusters that turn anonymous authentication off
// (AKS; GKE from 1.35; EKS from 1.32) cannot offer the strategy, whatever their signer does.
// It writes the outcome as the strategy's CredentialIssuer entry, with the reason of a failure.
// Every replica then uses the strategy (Issuer) while that entry says Success, as read from its
// informer: only the leader may create CertificateSigningRequests for a probe, and all replicas
// serve TokenCredentialRequests.
package csrstrategy

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	"sealion.dev/core/controller"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	configinformers "sealion.dev/core/generated/concierge/informers/externalversions/config/v1alpha1"
	configlisters "sealion.dev/core/generated/concierge/listers/config/v1alpha1"
	"sealion.dev/core/groupsuffix"
	"sealion.dev/servers/concierge/internal/clusterinfo"
	"sealion.dev/servers/concierge/internal/credentialissuer"
	"sealion.dev/servers/concierge/internal/csrsigner"
	"sealion.dev/servers/concierge/internal/dynamicca"
)

// ProbeInterval is how often the leader probes the signer. A probe is one CertificateSigningRequest,
// deleted at once.
const ProbeInterval = 5 * time.Minute

// ProbeUsername is the identity of the probe's certificate, which lives ten minutes in the
// Concierge's memory and nowhere else; it has no group and RBAC grants it nothing.
const ProbeUsername = "pinniped-concierge:certificate-signing-request-probe"

// StrategyWriter records the strategy's entry in the CredentialIssuer, or removes it; a
// *credentialissuer.Updater.
type StrategyWriter interface {
	SetStrategy(ctx context.Context, s configv1alpha1.CredentialIssuerStrategy) error
	RemoveStrategy(ctx context.Context, typ configv1alpha1.StrategyType) error
}

// Config is what the controller needs.
type Config struct {
	// CredentialIssuer names the Concierge's CredentialIssuer, whose spec sets the mode and whose
	// status the strategy is read back from.
	CredentialIssuer string
	// Signer issues the certificates; a *csrsigner.Issuer.
	Signer dynamicca.ClientCertIssuer
	// Kube reads kube-public/cluster-info; RESTConfig reaches the API server, whose address and CA
	// the probe's client uses with the probe certificate instead of the Concierge's credentials.
	Kube       kubernetes.Interface
	RESTConfig *rest.Config
	// APIGroupSuffix is the suffix of the Concierge's API groups, for the anonymous probe.
	APIGroupSuffix string
	// DiscoveryURL, when set, is the API server address advertised to clients instead of the one
	// in kube-public/cluster-info, as for the kube cert agent.
	DiscoveryURL string
	Status       StrategyWriter
	// Leading reports whether this replica leads: only the leader probes.
	Leading func() bool
}

// Controller probes the signer. Make one with New and start it with Run.
type Controller struct {
	*controller.Controller
	cfg               Config
	credentialIssuers configlisters.CredentialIssuerLister
	// whoAmI asks the API server who a client certificate is, and anonymousExchange sends it a
	// TokenCredentialRequest with no credential; tests replace them.
	whoAmI            func(ctx context.Context, certPEM, keyPEM []byte) (string, error)
	anonymousExchange func(ctx context.Context) error
	now               func() time.Time
}

// New returns the controller; credentialIssuers is the informer of the CredentialIssuers.
func New(cfg Config, credentialIssuers configinformers.CredentialIssuerInformer) *Controller {
	c := &Controller{cfg: cfg, credentialIssuers: credentialIssuers.Lister(), now: time.Now}
	c.whoAmI = c.selfSubjectReview
	c.anonymousExchange = c.anonymousTokenCredentialRequest
	c.Controller = controller.New(controller.Options{
		Name:   "certificate-signing-request-strategy",
		Sync:   func(ctx context.Context, _ string) error { return c.sync(ctx) },
		Resync: ProbeInterval,
		// A failed probe is retried sooner than the next one, up to it.
		MinBackoff: 5 * time.Second,
		MaxBackoff: ProbeInterval,
	})
	// The mode is in the CredentialIssuer's spec; a status write by any strategy is an event too,
	// and costs no probe (see sync).
	c.Watch(credentialIssuers.Informer(), controller.AsSingleton)
	return c
}

// sync probes the signer when this replica leads, the strategy is wanted, and the last probe is
// older than ProbeInterval or was not a probe, and records the outcome.
//
// In auto mode the strategy is wanted only where neither of Pinniped's strategies serves: the kube
// cert agent failed to read the cluster's signing key and the impersonation proxy failed or is
// disabled (neither is merely on its way). Elsewhere its entry is removed, so that a cluster that
// works today shows Pinniped's two entries (Pinniped's tests, and perhaps its users' tools, count
// them), runs no probe, and hands its clients the same kubeconfig after an upgrade as before.
// Enabled, it is always probed (and the kube cert agent does not run); disabled, its entry says so.
func (c *Controller) sync(ctx context.Context) error {
	if !c.cfg.Leading() {
		return nil
	}
	switch credentialissuer.CertificateSigningRequestMode(c.credentialIssuers, c.cfg.CredentialIssuer) {
	case configv1alpha1.CertificateSigningRequestModeDisabled:
		return c.cfg.Status.SetStrategy(ctx, configv1alpha1.CredentialIssuerStrategy{
			Type: configv1alpha1.StrategyTypeCertificateSigningRequest, Status: configv1alpha1.StrategyStatusError,
			Reason: configv1alpha1.StrategyReasonDisabled, Message: "disabled by spec.certificateSigningRequest.mode",
		})
	case configv1alpha1.CertificateSigningRequestModeAuto:
		if !c.failed(configv1alpha1.StrategyTypeKubeClusterSigningCertificate) || !c.failed(configv1alpha1.StrategyTypeImpersonationProxy) {
			return c.cfg.Status.RemoveStrategy(ctx, configv1alpha1.StrategyTypeCertificateSigningRequest)
		}
	}
	if current := c.entry(configv1alpha1.StrategyTypeCertificateSigningRequest); current != nil && current.Reason != configv1alpha1.StrategyReasonDisabled &&
		c.now().Sub(current.LastUpdateTime.Time) < ProbeInterval {
		return nil
	}
	strategy, err := c.probe(ctx)
	strategy.Type = configv1alpha1.StrategyTypeCertificateSigningRequest
	if werr := c.cfg.Status.SetStrategy(ctx, strategy); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// failed reports whether the strategy typ has reported that it cannot serve: an error that is not
// Pending. A strategy that has not reported yet has not failed.
func (c *Controller) failed(typ configv1alpha1.StrategyType) bool {
	e := c.entry(typ)
	return e != nil && e.Status == configv1alpha1.StrategyStatusError && e.Reason != configv1alpha1.StrategyReasonPending
}

// entry is the CredentialIssuer's entry of the strategy typ, or nil.
func (c *Controller) entry(typ configv1alpha1.StrategyType) *configv1alpha1.CredentialIssuerStrategy {
	ci, err := c.credentialIssuers.Get(c.cfg.CredentialIssuer)
	if err != nil {
		return nil
	}
	for i := range ci.Status.Strategies {
		if ci.Status.Strategies[i].Type == typ {
			return &ci.Status.Strategies[i]
		}
	}
	return nil
}

// probe checks that clients can reach the TokenCredentialRequest API with no credential, then
// issues a certificate for ProbeUsername and authenticates with it. A failure the cluster will not
// mend soon is a strategy in error with its reason and no error; the others are returned too, to
// be retried.
func (c *Controller) probe(ctx context.Context) (configv1alpha1.CredentialIssuerStrategy, error) {
	failed := func(reason configv1alpha1.StrategyReason, err error) configv1alpha1.CredentialIssuerStrategy {
		return configv1alpha1.CredentialIssuerStrategy{Status: configv1alpha1.StrategyStatusError, Reason: reason, Message: err.Error()}
	}
	// First, as it creates nothing: where clients cannot reach the API, a signer is of no use.
	switch err := c.anonymousExchange(ctx); {
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return failed(configv1alpha1.StrategyReasonAnonymousRequestsRefused, fmt.Errorf(
			"the API server refused a TokenCredentialRequest with no credential, as clients send it (%w); "+
				"it has anonymous authentication turned off, so clients need the impersonation proxy", err)), nil
	case err != nil:
		return failed(configv1alpha1.StrategyReasonErrorDuringSetup, err), err
	}
	certPEM, keyPEM, _, err := c.cfg.Signer.IssueClientCert(ctx, ProbeUsername, nil, nil, 0)
	switch {
	case errors.Is(err, csrsigner.ErrApprovalForbidden):
		return failed(configv1alpha1.StrategyReasonApprovalForbidden, err), nil
	case errors.Is(err, csrsigner.ErrNotIssued), errors.Is(err, csrsigner.ErrDenied):
		return failed(configv1alpha1.StrategyReasonSignerNotServed, err), nil
	case err != nil:
		return failed(configv1alpha1.StrategyReasonErrorDuringSetup, err), err
	}
	username, err := c.whoAmI(ctx, certPEM, keyPEM)
	switch {
	case apierrors.IsUnauthorized(err):
		return failed(configv1alpha1.StrategyReasonCertificateNotAccepted, fmt.Errorf("the API server refused the probe certificate: %w", err)), nil
	case err != nil:
		return failed(configv1alpha1.StrategyReasonErrorDuringSetup, err), err
	case username != ProbeUsername:
		return failed(configv1alpha1.StrategyReasonCertificateNotAccepted, fmt.Errorf("the API server took the probe certificate for %q", username)), nil
	}
	info, err := clusterinfo.Read(ctx, c.cfg.Kube)
	if err != nil {
		// As for the kube cert agent: the strategy issues (see Issuer), but cannot tell clients
		// where the API server is.
		var retry error
		if !errors.As(err, new(clusterinfo.UnusableError)) {
			retry = err
		}
		return failed(configv1alpha1.StrategyReasonCouldNotGetClusterInfo, fmt.Errorf(
			"the %s signer issued a certificate the API server accepted, but %w; "+
				"TokenCredentialRequests still work: give the CLI the API server's endpoint and CA "+
				"(pinniped get kubeconfig --concierge-mode TokenCredentialRequestAPI, or --concierge-endpoint and --concierge-ca-bundle)",
			csrsigner.Signer, err)), retry
	}
	if c.cfg.DiscoveryURL != "" {
		info.Server = c.cfg.DiscoveryURL
	}
	return configv1alpha1.CredentialIssuerStrategy{
		Status: configv1alpha1.StrategyStatusSuccess, Reason: configv1alpha1.StrategyReasonSignerAvailable,
		Message: "the " + csrsigner.Signer + " signer issued a certificate the API server accepted",
		Frontend: &configv1alpha1.CredentialIssuerFrontend{
			Type: configv1alpha1.FrontendTypeTokenCredentialRequestAPI, TokenCredentialRequestAPIInfo: info,
		},
	}, nil
}

// selfSubjectReview asks the API server who a client certificate is, with no other credential.
func (c *Controller) selfSubjectReview(ctx context.Context, certPEM, keyPEM []byte) (string, error) {
	cfg := rest.AnonymousClientConfig(c.cfg.RESTConfig)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("authenticating with the probe certificate: %w", err)
	}
	return review.Status.UserInfo.Username, nil
}

// anonymousTokenCredentialRequest sends the API server a TokenCredentialRequest with no credential,
// as the CLI does, for an authenticator that does not exist: the Concierge answers it with the
// uniform authentication failure, and only the API server can refuse it.
func (c *Controller) anonymousTokenCredentialRequest(ctx context.Context) error {
	cfg := rest.AnonymousClientConfig(c.cfg.RESTConfig)
	cfg.Wrap(groupsuffix.Transport(c.cfg.APIGroupSuffix))
	client, err := conciergeclientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = client.LoginV1alpha1().TokenCredentialRequests().Create(ctx, &loginv1alpha1.TokenCredentialRequest{
		Spec: loginv1alpha1.TokenCredentialRequestSpec{
			Token: "probe",
			Authenticator: corev1.TypedLocalObjectReference{
				APIGroup: ptr.To("authentication.concierge." + groupsuffix.Default), Kind: "WebhookAuthenticator",
				Name: "pinniped-concierge-certificate-signing-request-probe",
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("an anonymous TokenCredentialRequest: %w", err)
	}
	return nil
}

// Issuer issues through Signer while the CredentialIssuer's entry of the strategy says the signer
// works (Success, or CouldNotGetClusterInfo: only the address for clients is missing), and answers
// dynamicca.ErrNoCA otherwise, so that a dynamicca.FirstLoaded chain goes on to its next issuer.
type Issuer struct {
	Signer            dynamicca.ClientCertIssuer
	CredentialIssuers configlisters.CredentialIssuerLister
	CredentialIssuer  string
}

// IssueClientCert issues through the signer when the strategy works; see csrsigner.Issuer.
func (i *Issuer) IssueClientCert(ctx context.Context, username string, groups, organizationalUnits []string, ttl time.Duration) ([]byte, []byte, time.Time, error) {
	if !i.available() {
		return nil, nil, time.Time{}, fmt.Errorf("the CertificateSigningRequest strategy: %w", dynamicca.ErrNoCA)
	}
	return i.Signer.IssueClientCert(ctx, username, groups, organizationalUnits, ttl)
}

func (i *Issuer) available() bool {
	if credentialissuer.CertificateSigningRequestMode(i.CredentialIssuers, i.CredentialIssuer) == configv1alpha1.CertificateSigningRequestModeDisabled {
		return false
	}
	ci, err := i.CredentialIssuers.Get(i.CredentialIssuer)
	if err != nil {
		return false
	}
	for _, s := range ci.Status.Strategies {
		if s.Type == configv1alpha1.StrategyTypeCertificateSigningRequest {
			return s.Status == configv1alpha1.StrategyStatusSuccess || s.Reason == configv1alpha1.StrategyReasonCouldNotGetClusterInfo
		}
	}
	return false
}
