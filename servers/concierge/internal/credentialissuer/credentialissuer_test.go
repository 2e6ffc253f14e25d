package credentialissuer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	conciergefake "sealion.dev/core/generated/concierge/clientset/versioned/fake"
)

var (
	t0 = time.Date(2025, 7, 1, 12, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

func strategy(typ configv1alpha1.StrategyType, status configv1alpha1.StrategyStatus, message string, at time.Time) configv1alpha1.CredentialIssuerStrategy {
	return configv1alpha1.CredentialIssuerStrategy{
		Type: typ, Status: status, Reason: configv1alpha1.StrategyReasonFetchedKey, Message: message,
		LastUpdateTime: metav1.NewTime(at),
	}
}

const (
	kube  = configv1alpha1.StrategyTypeKubeClusterSigningCertificate
	proxy = configv1alpha1.StrategyTypeImpersonationProxy
	ok    = configv1alpha1.StrategyStatusSuccess
	bad   = configv1alpha1.StrategyStatusError
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name        string
		before      []configv1alpha1.CredentialIssuerStrategy
		set         configv1alpha1.CredentialIssuerStrategy
		wantChanged bool
		want        []configv1alpha1.CredentialIssuerStrategy
	}{
		{
			name: "added to an empty status", set: strategy(kube, ok, "m", time.Time{}), wantChanged: true,
			want: []configv1alpha1.CredentialIssuerStrategy{strategy(kube, ok, "m", t1)},
		},
		{
			// As upstream: the certificate strategy first, so that clients taking the first
			// successful strategy use it wherever it works.
			name:   "the certificate strategy goes before the proxy",
			before: []configv1alpha1.CredentialIssuerStrategy{strategy(proxy, ok, "p", t0)},
			set:    strategy(kube, ok, "m", time.Time{}), wantChanged: true,
			want: []configv1alpha1.CredentialIssuerStrategy{strategy(kube, ok, "m", t1), strategy(proxy, ok, "p", t0)},
		},
		{
			name:   "an order that is not upstream's is put right",
			before: []configv1alpha1.CredentialIssuerStrategy{strategy("Zed", ok, "z", t0), strategy("Other", ok, "o", t0), strategy(proxy, ok, "p", t0), strategy(kube, ok, "m", t0)},
			set:    strategy(kube, ok, "m", time.Time{}), wantChanged: true,
			want: []configv1alpha1.CredentialIssuerStrategy{strategy(kube, ok, "m", t0), strategy(proxy, ok, "p", t0), strategy("Other", ok, "o", t0), strategy("Zed", ok, "z", t0)},
		},
		{
			name:   "replaced in place, other types untouched",
			before: []configv1alpha1.CredentialIssuerStrategy{strategy(kube, bad, "old", t0), strategy(proxy, ok, "p", t0)},
			set:    strategy(kube, ok, "m", time.Time{}), wantChanged: true,
			want: []configv1alpha1.CredentialIssuerStrategy{strategy(kube, ok, "m", t1), strategy(proxy, ok, "p", t0)},
		},
		{
			name:   "unchanged except for the time",
			before: []configv1alpha1.CredentialIssuerStrategy{strategy(kube, ok, "m", t0)},
			set:    strategy(kube, ok, "m", t1.Add(time.Hour)),
			want:   []configv1alpha1.CredentialIssuerStrategy{strategy(kube, ok, "m", t0)},
		},
		{
			name: "a frontend that differs",
			before: []configv1alpha1.CredentialIssuerStrategy{func() configv1alpha1.CredentialIssuerStrategy {
				s := strategy(kube, ok, "m", t0)
				s.Frontend = &configv1alpha1.CredentialIssuerFrontend{Type: configv1alpha1.FrontendTypeTokenCredentialRequestAPI}
				return s
			}()},
			set: strategy(kube, ok, "m", time.Time{}), wantChanged: true,
			want: []configv1alpha1.CredentialIssuerStrategy{strategy(kube, ok, "m", t1)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := configv1alpha1.CredentialIssuerStatus{Strategies: tt.before}
			// Sub-second precision is dropped, as the API server would.
			assert.Equal(t, tt.wantChanged, Merge(&status, tt.set, t1.Add(300*time.Millisecond)))
			assert.Equal(t, tt.want, status.Strategies)
		})
	}
}

func TestSetStrategy(t *testing.T) {
	spec := configv1alpha1.CredentialIssuerSpec{ImpersonationProxy: &configv1alpha1.ImpersonationProxySpec{Mode: configv1alpha1.ImpersonationProxyModeAuto}}
	existing := &configv1alpha1.CredentialIssuer{
		ObjectMeta: metav1.ObjectMeta{Name: "ci", Labels: map[string]string{"mine": "yes"}},
		Status:     configv1alpha1.CredentialIssuerStatus{Strategies: []configv1alpha1.CredentialIssuerStrategy{strategy(proxy, ok, "p", t0)}},
	}
	tests := []struct {
		name        string
		objects     []runtime.Object
		set         configv1alpha1.CredentialIssuerStrategy
		conflicts   int
		wantActions []string
		wantLabels  map[string]string
		wantSpec    configv1alpha1.CredentialIssuerSpec
		want        []configv1alpha1.CredentialIssuerStrategy
	}{
		{
			name: "created when missing", set: strategy(kube, ok, "m", time.Time{}),
			wantActions: []string{"get", "create", "update/status"},
			wantLabels:  map[string]string{"app": "pinniped-concierge"}, wantSpec: spec,
			want: []configv1alpha1.CredentialIssuerStrategy{strategy(kube, ok, "m", t1)},
		},
		{
			name: "merged into an existing one", objects: []runtime.Object{existing.DeepCopy()}, set: strategy(kube, ok, "m", time.Time{}),
			wantActions: []string{"get", "update/status"}, wantLabels: existing.Labels,
			want: []configv1alpha1.CredentialIssuerStrategy{strategy(kube, ok, "m", t1), strategy(proxy, ok, "p", t0)},
		},
		{
			name: "nothing written when unchanged", objects: []runtime.Object{existing.DeepCopy()}, set: strategy(proxy, ok, "p", time.Time{}),
			wantActions: []string{"get"}, wantLabels: existing.Labels,
			want: []configv1alpha1.CredentialIssuerStrategy{strategy(proxy, ok, "p", t0)},
		},
		{
			name: "a conflict is retried", objects: []runtime.Object{existing.DeepCopy()}, set: strategy(kube, bad, "e", time.Time{}), conflicts: 2,
			wantActions: []string{"get", "update/status", "get", "update/status", "get", "update/status"}, wantLabels: existing.Labels,
			want: []configv1alpha1.CredentialIssuerStrategy{strategy(kube, bad, "e", t1), strategy(proxy, ok, "p", t0)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := conciergefake.NewSimpleClientset(tt.objects...)
			conflicts := tt.conflicts
			client.PrependReactor("update", "credentialissuers", func(clienttesting.Action) (bool, runtime.Object, error) {
				if conflicts > 0 {
					conflicts--
					return true, nil, apierrors.NewConflict(configv1alpha1.Resource("credentialissuers"), "ci", nil)
				}
				return false, nil, nil
			})
			u := &Updater{Client: client, Name: "ci", Labels: map[string]string{"app": "pinniped-concierge"}, Spec: spec, Now: func() time.Time { return t1 }}
			require.NoError(t, u.SetStrategy(context.Background(), tt.set))

			var actions []string
			for _, a := range client.Actions() {
				verb := a.GetVerb()
				if a.GetSubresource() != "" {
					verb += "/" + a.GetSubresource()
				}
				actions = append(actions, verb)
			}
			assert.Equal(t, tt.wantActions, actions)
			got, err := client.ConfigV1alpha1().CredentialIssuers().Get(context.Background(), "ci", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tt.wantLabels, got.Labels)
			assert.Equal(t, tt.wantSpec, got.Spec)
			assert.Equal(t, tt.want, got.Status.Strategies)
		})
	}
}

// Where the install creates the CredentialIssuer, a missing one is waited for, not created, so
// that the install's creation does not find it there already.
func TestSetStrategyLeavesMissing(t *testing.T) {
	client := conciergefake.NewSimpleClientset()
	u := &Updater{Client: client, Name: "ci", LeaveMissing: true}
	err := u.SetStrategy(context.Background(), strategy(kube, ok, "m", time.Time{}))
	require.ErrorContains(t, err, "recording the KubeClusterSigningCertificate strategy in CredentialIssuer ci: ")
	require.ErrorContains(t, err, "(the install creates it)")
	assert.True(t, apierrors.IsNotFound(err))
	for _, a := range client.Actions() {
		assert.Equal(t, "get", a.GetVerb())
	}

	require.NoError(t, client.Tracker().Add(&configv1alpha1.CredentialIssuer{ObjectMeta: metav1.ObjectMeta{Name: "ci"}}))
	require.NoError(t, u.SetStrategy(context.Background(), strategy(kube, ok, "m", time.Time{})))
	got, err := client.ConfigV1alpha1().CredentialIssuers().Get(context.Background(), "ci", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, got.Status.Strategies, 1)
}

func TestSetStrategyError(t *testing.T) {
	client := conciergefake.NewSimpleClientset()
	client.PrependReactor("create", "credentialissuers", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(configv1alpha1.Resource("credentialissuers"), "ci", nil)
	})
	u := &Updater{Client: client, Name: "ci"}
	err := u.SetStrategy(context.Background(), strategy(kube, ok, "m", time.Time{}))
	require.ErrorContains(t, err, "recording the KubeClusterSigningCertificate strategy in CredentialIssuer ci: ")
	assert.True(t, apierrors.IsForbidden(err))
}

// RemoveStrategy takes out only the entry of its type, and writes nothing when there is none.
func TestRemoveStrategy(t *testing.T) {
	csr := configv1alpha1.StrategyTypeCertificateSigningRequest
	existing := &configv1alpha1.CredentialIssuer{
		ObjectMeta: metav1.ObjectMeta{Name: "ci"},
		Status: configv1alpha1.CredentialIssuerStatus{Strategies: []configv1alpha1.CredentialIssuerStrategy{
			strategy(kube, ok, "k", t0), strategy(csr, bad, "c", t0), strategy(proxy, ok, "p", t0)}},
	}
	client := conciergefake.NewSimpleClientset(existing)
	u := &Updater{Client: client, Name: "ci"}
	require.NoError(t, u.RemoveStrategy(context.Background(), csr))
	got, err := client.ConfigV1alpha1().CredentialIssuers().Get(context.Background(), "ci", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []configv1alpha1.CredentialIssuerStrategy{strategy(kube, ok, "k", t0), strategy(proxy, ok, "p", t0)}, got.Status.Strategies)
	writes := len(client.Actions())
	require.NoError(t, u.RemoveStrategy(context.Background(), csr))
	assert.Equal(t, writes+1, len(client.Actions()), "only a get when there is nothing to remove")
}

// The CertificateSigningRequest entry sits between upstream's two, in the order the Concierge
// issues: a client taking the first successful entry prefers a certificate to the proxy.
func TestMergeOrdersOurStrategy(t *testing.T) {
	var status configv1alpha1.CredentialIssuerStatus
	for _, typ := range []configv1alpha1.StrategyType{proxy, configv1alpha1.StrategyTypeCertificateSigningRequest, kube} {
		Merge(&status, strategy(typ, ok, "", t0), t0)
	}
	var order []configv1alpha1.StrategyType
	for _, s := range status.Strategies {
		order = append(order, s.Type)
	}
	assert.Equal(t, []configv1alpha1.StrategyType{kube, configv1alpha1.StrategyTypeCertificateSigningRequest, proxy}, order)
}
