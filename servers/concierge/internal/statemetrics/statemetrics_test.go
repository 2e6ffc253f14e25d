package statemetrics

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	authlisters "sealion.dev/core/generated/concierge/listers/authentication/v1alpha1"
	configlisters "sealion.dev/core/generated/concierge/listers/config/v1alpha1"
)

type expiring struct {
	at     time.Time
	loaded bool
}

func (e expiring) NotAfter() (time.Time, bool) { return e.at, e.loaded }

func indexer(t *testing.T, objects ...any) cache.Indexer {
	t.Helper()
	i := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, o := range objects {
		if err := i.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return i
}

// A scrape reports each listed strategy, every kind and phase of authenticator (none as 0), and
// the expiry of each signer that holds a CA.
func TestCollect(t *testing.T) {
	ci := &configv1alpha1.CredentialIssuer{ObjectMeta: metav1.ObjectMeta{Name: "pinniped-concierge-config"},
		Status: configv1alpha1.CredentialIssuerStatus{Strategies: []configv1alpha1.CredentialIssuerStrategy{
			{Type: configv1alpha1.StrategyTypeKubeClusterSigningCertificate, Status: configv1alpha1.StrategyStatusSuccess, Reason: configv1alpha1.StrategyReasonFetchedKey},
			{Type: configv1alpha1.StrategyTypeImpersonationProxy, Status: configv1alpha1.StrategyStatusError, Reason: configv1alpha1.StrategyReasonDisabled},
		}}}
	jwt := func(name string, p authv1alpha1.Phase) *authv1alpha1.JWTAuthenticator {
		return &authv1alpha1.JWTAuthenticator{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: authv1alpha1.JWTAuthenticatorStatus{Phase: p}}
	}
	c := &Collector{
		CredentialIssuers:     configlisters.NewCredentialIssuerLister(indexer(t, ci)),
		CredentialIssuer:      "pinniped-concierge-config",
		JWTAuthenticators:     authlisters.NewJWTAuthenticatorLister(indexer(t, jwt("a", authv1alpha1.PhaseReady), jwt("b", authv1alpha1.PhaseReady), jwt("c", authv1alpha1.PhaseError), jwt("new", ""))),
		WebhookAuthenticators: authlisters.NewWebhookAuthenticatorLister(indexer(t)),
		Signers: map[string]Expiring{
			"KubeClusterSigningCertificate": expiring{time.Unix(1893456000, 0), true},
			"ImpersonationProxy":            expiring{},
		},
	}
	want := `
# HELP pinniped_concierge_authenticators [ALPHA] Authenticators by kind and phase (Ready, Pending or Error: an Error one refuses every exchange).
# TYPE pinniped_concierge_authenticators gauge
pinniped_concierge_authenticators{kind="JWTAuthenticator",phase="Error"} 1
pinniped_concierge_authenticators{kind="JWTAuthenticator",phase="Pending"} 1
pinniped_concierge_authenticators{kind="JWTAuthenticator",phase="Ready"} 2
pinniped_concierge_authenticators{kind="WebhookAuthenticator",phase="Error"} 0
pinniped_concierge_authenticators{kind="WebhookAuthenticator",phase="Pending"} 0
pinniped_concierge_authenticators{kind="WebhookAuthenticator",phase="Ready"} 0
# HELP pinniped_concierge_signer_expiry_timestamp_seconds [ALPHA] When the CA that signs a strategy's client certificates expires, in seconds since the epoch; no series while the strategy holds none.
# TYPE pinniped_concierge_signer_expiry_timestamp_seconds gauge
pinniped_concierge_signer_expiry_timestamp_seconds{strategy="KubeClusterSigningCertificate"} 1.893456e+09
# HELP pinniped_concierge_strategy_status [ALPHA] 1 for each strategy the CredentialIssuer lists, with its status (Success or Error) and reason; a strategy not listed has no series.
# TYPE pinniped_concierge_strategy_status gauge
pinniped_concierge_strategy_status{reason="Disabled",status="Error",strategy="ImpersonationProxy"} 1
pinniped_concierge_strategy_status{reason="FetchedKey",status="Success",strategy="KubeClusterSigningCertificate"} 1
`
	if err := testutil.CustomCollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
