package csrstrategy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	conciergefake "sealion.dev/core/generated/concierge/clientset/versioned/fake"
	conciergeinformers "sealion.dev/core/generated/concierge/informers/externalversions"
	"sealion.dev/servers/concierge/internal/clusterinfo"
	"sealion.dev/servers/concierge/internal/csrsigner"
	"sealion.dev/servers/concierge/internal/dynamicca"
)

const name = "pinniped-concierge-config"

// fakeSigner issues what it is told, and counts the probes.
type fakeSigner struct {
	err   error
	calls int
}

func (f *fakeSigner) IssueClientCert(context.Context, string, []string, []string, time.Duration) ([]byte, []byte, time.Time, error) {
	f.calls++
	if f.err != nil {
		return nil, nil, time.Time{}, f.err
	}
	return []byte("CERT"), []byte("KEY"), time.Now().Add(10 * time.Minute), nil
}

// statusWriter writes the entry into the informer's cache, as the CredentialIssuer's watch would.
type statusWriter struct {
	fx       *fixture
	writes   []configv1alpha1.CredentialIssuerStrategy
	removals int
}

func (w *statusWriter) SetStrategy(_ context.Context, s configv1alpha1.CredentialIssuerStrategy) error {
	w.writes = append(w.writes, s)
	s.LastUpdateTime = metav1.NewTime(w.fx.now)
	return w.put(s.Type, &s)
}

func (w *statusWriter) RemoveStrategy(_ context.Context, typ configv1alpha1.StrategyType) error {
	w.removals++
	return w.put(typ, nil)
}

// put replaces the entry of typ with s, or removes it when s is nil.
func (w *statusWriter) put(typ configv1alpha1.StrategyType, s *configv1alpha1.CredentialIssuerStrategy) error {
	ci := w.fx.credentialIssuer.DeepCopy()
	ci.Status.Strategies = slices.DeleteFunc(ci.Status.Strategies, func(e configv1alpha1.CredentialIssuerStrategy) bool { return e.Type == typ })
	if s != nil {
		ci.Status.Strategies = append(ci.Status.Strategies, *s)
	}
	w.fx.credentialIssuer = ci
	return w.fx.cache.Update(ci)
}

type fixture struct {
	c                *Controller
	signer           *fakeSigner
	status           *statusWriter
	credentialIssuer *configv1alpha1.CredentialIssuer
	cache            interface{ Update(any) error }
	leading          bool
	username         string
	whoAmIErr        error
	anonymousErr     error
	now              time.Time
	issuer           *Issuer
}

const kubeconfig = "clusters:\n- name: c\n  cluster: {server: \"https://10.0.0.1:6443\", certificate-authority-data: Q0EgUEVN}\n"

func newFixture(t *testing.T, mode configv1alpha1.CertificateSigningRequestMode) *fixture {
	t.Helper()
	fx := &fixture{signer: &fakeSigner{}, leading: true, username: ProbeUsername, now: time.Now()}
	// The kube cert agent cannot read the key, as on a managed cluster, and the impersonation proxy
	// cannot start: auto mode wants the strategy.
	fx.credentialIssuer = &configv1alpha1.CredentialIssuer{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: configv1alpha1.CredentialIssuerStatus{Strategies: []configv1alpha1.CredentialIssuerStrategy{{
			Type: configv1alpha1.StrategyTypeKubeClusterSigningCertificate, Status: configv1alpha1.StrategyStatusError,
			Reason: configv1alpha1.StrategyReasonCouldNotFetchKey, Message: "no control plane nodes",
		}, {
			Type: configv1alpha1.StrategyTypeImpersonationProxy, Status: configv1alpha1.StrategyStatusError,
			Reason: configv1alpha1.StrategyReasonErrorDuringSetup, Message: "no load balancer",
		}}}}
	if mode != "" {
		fx.credentialIssuer.Spec.CertificateSigningRequest = &configv1alpha1.CertificateSigningRequestSpec{Mode: mode}
	}
	informer := conciergeinformers.NewSharedInformerFactory(conciergefake.NewSimpleClientset(), 0).Config().V1alpha1().CredentialIssuers()
	indexer := informer.Informer().GetIndexer()
	if err := indexer.Add(fx.credentialIssuer); err != nil {
		t.Fatal(err)
	}
	fx.cache = indexer
	fx.status = &statusWriter{fx: fx}
	kube := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: clusterinfo.Namespace, Name: clusterinfo.Name},
		Data: map[string]string{"kubeconfig": kubeconfig}})
	fx.c = New(Config{CredentialIssuer: name, Signer: fx.signer, Kube: kube, Status: fx.status, Leading: func() bool { return fx.leading }}, informer)
	fx.c.whoAmI = func(context.Context, []byte, []byte) (string, error) { return fx.username, fx.whoAmIErr }
	fx.c.anonymousExchange = func(context.Context) error { return fx.anonymousErr }
	fx.c.now = func() time.Time { return fx.now }
	fx.issuer = &Issuer{Signer: fx.signer, CredentialIssuers: informer.Lister(), CredentialIssuer: name}
	return fx
}

func (fx *fixture) entry(t *testing.T) configv1alpha1.CredentialIssuerStrategy {
	t.Helper()
	if len(fx.status.writes) == 0 {
		t.Fatal("no strategy written")
	}
	return fx.status.writes[len(fx.status.writes)-1]
}

// A signer that issues certificates the API server accepts makes the strategy work, with the
// TokenCredentialRequest frontend of the cluster; the probe is not repeated within its interval,
// and certificates are then issued through the strategy.
func TestProbeSucceeds(t *testing.T) {
	fx := newFixture(t, "")
	if _, _, _, err := fx.issuer.IssueClientCert(context.Background(), "pinny", nil, nil, 0); !errors.Is(err, dynamicca.ErrNoCA) {
		t.Errorf("issuing before a probe: %v, want ErrNoCA", err)
	}
	if err := fx.c.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := fx.entry(t)
	if e.Type != configv1alpha1.StrategyTypeCertificateSigningRequest || e.Status != configv1alpha1.StrategyStatusSuccess ||
		e.Reason != configv1alpha1.StrategyReasonSignerAvailable || e.Frontend == nil ||
		e.Frontend.Type != configv1alpha1.FrontendTypeTokenCredentialRequestAPI || e.Frontend.TokenCredentialRequestAPIInfo.Server != "https://10.0.0.1:6443" {
		t.Errorf("entry %+v", e)
	}
	if err := fx.c.sync(context.Background()); err != nil || fx.signer.calls != 1 {
		t.Errorf("a second sync at once: %v, %d probes; want the first only", err, fx.signer.calls)
	}
	fx.now = fx.now.Add(ProbeInterval)
	if err := fx.c.sync(context.Background()); err != nil || fx.signer.calls != 2 {
		t.Errorf("a sync a probe interval later: %v, %d probes; want a second", err, fx.signer.calls)
	}
	if _, _, _, err := fx.issuer.IssueClientCert(context.Background(), "pinny", nil, nil, 0); err != nil || fx.signer.calls != 3 {
		t.Errorf("issuing through a working strategy: %v", err)
	}
}

// Each way the cluster falls short has its reason, and issuing falls through to the next issuer.
func TestProbeFails(t *testing.T) {
	for _, tc := range []struct {
		name         string
		anonymousErr error
		signErr      error
		username     string
		whoAmIErr    error
		reason       configv1alpha1.StrategyReason
	}{
		{name: "anonymous authentication off", anonymousErr: apierrors.NewUnauthorized("Unauthorized"), reason: configv1alpha1.StrategyReasonAnonymousRequestsRefused},
		{name: "anonymous requests forbidden", anonymousErr: apierrors.NewForbidden(schema.GroupResource{Resource: "tokencredentialrequests"}, "", errors.New("RBAC")), reason: configv1alpha1.StrategyReasonAnonymousRequestsRefused},
		{name: "approval forbidden", signErr: csrsigner.ErrApprovalForbidden, reason: configv1alpha1.StrategyReasonApprovalForbidden},
		{name: "no signer", signErr: csrsigner.ErrNotIssued, reason: configv1alpha1.StrategyReasonSignerNotServed},
		{name: "denied", signErr: csrsigner.ErrDenied, reason: configv1alpha1.StrategyReasonSignerNotServed},
		{name: "certificate refused", username: ProbeUsername, whoAmIErr: apierrors.NewUnauthorized("Unauthorized"), reason: configv1alpha1.StrategyReasonCertificateNotAccepted},
		{name: "certificate taken for another user", username: "system:anonymous", reason: configv1alpha1.StrategyReasonCertificateNotAccepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, configv1alpha1.CertificateSigningRequestModeAuto)
			fx.signer.err, fx.whoAmIErr, fx.anonymousErr = tc.signErr, tc.whoAmIErr, tc.anonymousErr
			if tc.username != "" {
				fx.username = tc.username
			}
			if err := fx.c.sync(context.Background()); err != nil {
				t.Errorf("a failure the cluster will not mend soon is not retried: %v", err)
			}
			if e := fx.entry(t); e.Status != configv1alpha1.StrategyStatusError || e.Reason != tc.reason || e.Frontend != nil {
				t.Errorf("entry %+v, want an error with reason %s", e, tc.reason)
			}
			if tc.anonymousErr != nil && fx.signer.calls != 0 {
				t.Errorf("%d certificates requested where clients could not fetch them; want none", fx.signer.calls)
			}
			if _, _, _, err := fx.issuer.IssueClientCert(context.Background(), "pinny", nil, nil, 0); !errors.Is(err, dynamicca.ErrNoCA) {
				t.Errorf("issuing through a failed strategy: %v, want ErrNoCA", err)
			}
		})
	}
}

// Disabled, the strategy says so and is neither probed nor used; only the leader probes.
func TestDisabledAndFollower(t *testing.T) {
	fx := newFixture(t, configv1alpha1.CertificateSigningRequestModeDisabled)
	if err := fx.c.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e := fx.entry(t); e.Reason != configv1alpha1.StrategyReasonDisabled || fx.signer.calls != 0 {
		t.Errorf("entry %+v after %d probes; want Disabled and none", e, fx.signer.calls)
	}
	if _, _, _, err := fx.issuer.IssueClientCert(context.Background(), "pinny", nil, nil, 0); !errors.Is(err, dynamicca.ErrNoCA) {
		t.Errorf("issuing while disabled: %v, want ErrNoCA", err)
	}

	follower := newFixture(t, "")
	follower.leading = false
	if err := follower.c.sync(context.Background()); err != nil || follower.signer.calls != 0 || len(follower.status.writes) != 0 {
		t.Errorf("a follower: %v, %d probes, %d writes; want none", err, follower.signer.calls, len(follower.status.writes))
	}
}

// In auto mode, where the kube cert agent or the impersonation proxy works (or is on its way, or
// has not reported yet), the strategy is neither probed nor listed: the CredentialIssuer shows
// Pinniped's entries only. Enabled, it is probed whatever the others do.
func TestAutoLeavesItToPinnipedsStrategies(t *testing.T) {
	for _, tc := range []struct {
		typ    configv1alpha1.StrategyType
		status configv1alpha1.StrategyStatus
		reason configv1alpha1.StrategyReason
	}{
		{configv1alpha1.StrategyTypeKubeClusterSigningCertificate, configv1alpha1.StrategyStatusSuccess, configv1alpha1.StrategyReasonFetchedKey},
		{configv1alpha1.StrategyTypeKubeClusterSigningCertificate, configv1alpha1.StrategyStatusError, configv1alpha1.StrategyReasonPending},
		{configv1alpha1.StrategyTypeKubeClusterSigningCertificate, "", ""},
		{configv1alpha1.StrategyTypeImpersonationProxy, configv1alpha1.StrategyStatusSuccess, configv1alpha1.StrategyReasonListening},
		{configv1alpha1.StrategyTypeImpersonationProxy, configv1alpha1.StrategyStatusError, configv1alpha1.StrategyReasonPending},
		{configv1alpha1.StrategyTypeImpersonationProxy, "", ""},
	} {
		fx := newFixture(t, "")
		var entry *configv1alpha1.CredentialIssuerStrategy // none: not reported yet
		if tc.status != "" {
			entry = &configv1alpha1.CredentialIssuerStrategy{Type: tc.typ, Status: tc.status, Reason: tc.reason}
		}
		if err := fx.status.put(tc.typ, entry); err != nil {
			t.Fatal(err)
		}
		if err := fx.status.put(configv1alpha1.StrategyTypeCertificateSigningRequest, &configv1alpha1.CredentialIssuerStrategy{
			Type: configv1alpha1.StrategyTypeCertificateSigningRequest, Status: configv1alpha1.StrategyStatusSuccess}); err != nil {
			t.Fatal(err)
		}
		if err := fx.c.sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		if fx.signer.calls != 0 || slices.ContainsFunc(fx.credentialIssuer.Status.Strategies, func(s configv1alpha1.CredentialIssuerStrategy) bool {
			return s.Type == configv1alpha1.StrategyTypeCertificateSigningRequest
		}) {
			t.Errorf("%s %s/%s: %d probes, entries %+v; want none and no entry of ours", tc.typ, tc.status, tc.reason, fx.signer.calls, fx.credentialIssuer.Status.Strategies)
		}
	}

	fx := newFixture(t, configv1alpha1.CertificateSigningRequestModeEnabled)
	if err := fx.status.put(configv1alpha1.StrategyTypeKubeClusterSigningCertificate, &configv1alpha1.CredentialIssuerStrategy{
		Type: configv1alpha1.StrategyTypeKubeClusterSigningCertificate, Status: configv1alpha1.StrategyStatusSuccess}); err != nil {
		t.Fatal(err)
	}
	if err := fx.c.sync(context.Background()); err != nil || fx.signer.calls != 1 {
		t.Errorf("enabled: %v, %d probes; want one", err, fx.signer.calls)
	}
}

// Without kube-public/cluster-info (clusters not built by kubeadm) the signer still works: the
// entry says what is missing and how clients do without it, and certificates are still issued.
func TestWithoutClusterInfo(t *testing.T) {
	fx := newFixture(t, configv1alpha1.CertificateSigningRequestModeEnabled)
	if err := fx.c.cfg.Kube.CoreV1().ConfigMaps(clusterinfo.Namespace).Delete(context.Background(), clusterinfo.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := fx.c.sync(context.Background()); err != nil {
		t.Errorf("a missing ConfigMap is not retried sooner than the next probe: %v", err)
	}
	e := fx.entry(t)
	if e.Status != configv1alpha1.StrategyStatusError || e.Reason != configv1alpha1.StrategyReasonCouldNotGetClusterInfo ||
		!strings.Contains(e.Message, "--concierge-mode TokenCredentialRequestAPI") || e.Frontend != nil {
		t.Errorf("entry %+v", e)
	}
	if _, _, _, err := fx.issuer.IssueClientCert(context.Background(), "pinny", nil, nil, 0); err != nil {
		t.Errorf("issuing where only cluster-info is missing: %v", err)
	}
}
