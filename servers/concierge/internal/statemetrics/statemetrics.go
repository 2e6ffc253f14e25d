// Package statemetrics exports the Concierge's state as Prometheus metrics, read at each scrape
// from what the controllers already hold, so that nothing is counted twice or goes stale: each
// strategy's CredentialIssuer entry, the authenticators by kind and phase, and when each signing
// CA the Concierge holds expires. Every label value comes from a fixed set (strategy types,
// statuses, reasons and phases are enumerations of the API); no object's name is a label.
package statemetrics

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	authlisters "sealion.dev/core/generated/concierge/listers/authentication/v1alpha1"
	configlisters "sealion.dev/core/generated/concierge/listers/config/v1alpha1"
)

var (
	strategyDesc = metrics.NewDesc("pinniped_concierge_strategy_status",
		"1 for each strategy the CredentialIssuer lists, with its status (Success or Error) and reason; a strategy not listed has no series.",
		[]string{"strategy", "status", "reason"}, nil, metrics.ALPHA, "")
	authenticatorsDesc = metrics.NewDesc("pinniped_concierge_authenticators",
		"Authenticators by kind and phase (Ready, Pending or Error: an Error one refuses every exchange).",
		[]string{"kind", "phase"}, nil, metrics.ALPHA, "")
	signerExpiryDesc = metrics.NewDesc("pinniped_concierge_signer_expiry_timestamp_seconds",
		"When the CA that signs a strategy's client certificates expires, in seconds since the epoch; no series while the strategy holds none.",
		[]string{"strategy"}, nil, metrics.ALPHA, "")
)

// Expiring is a signer whose CA may expire; a *dynamicca.Signer.
type Expiring interface {
	NotAfter() (time.Time, bool)
}

// Collector collects the state metrics. Register it with legacyregistry.CustomMustRegister.
type Collector struct {
	metrics.BaseStableCollector

	CredentialIssuers configlisters.CredentialIssuerLister
	// CredentialIssuer names the Concierge's CredentialIssuer.
	CredentialIssuer      string
	JWTAuthenticators     authlisters.JWTAuthenticatorLister
	WebhookAuthenticators authlisters.WebhookAuthenticatorLister
	// Signers are the in-process CAs by the strategy they sign for.
	Signers map[string]Expiring
}

var _ metrics.StableCollector = &Collector{}

// DescribeWithStability lists the metrics.
func (c *Collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- strategyDesc
	ch <- authenticatorsDesc
	ch <- signerExpiryDesc
}

// CollectWithStability reads the state.
func (c *Collector) CollectWithStability(ch chan<- metrics.Metric) {
	if ci, err := c.CredentialIssuers.Get(c.CredentialIssuer); err == nil {
		for _, s := range ci.Status.Strategies {
			ch <- metrics.NewLazyConstMetric(strategyDesc, metrics.GaugeValue, 1, string(s.Type), string(s.Status), string(s.Reason))
		}
	}
	phases := map[[2]string]int{}
	for _, kind := range []string{"JWTAuthenticator", "WebhookAuthenticator"} {
		for _, phase := range []authv1alpha1.Phase{authv1alpha1.PhaseReady, authv1alpha1.PhasePending, authv1alpha1.PhaseError} {
			phases[[2]string{kind, string(phase)}] = 0 // a phase with none is 0, not absent, so that alerts can compare
		}
	}
	if jwts, err := c.JWTAuthenticators.List(labels.Everything()); err == nil {
		for _, a := range jwts {
			phases[[2]string{"JWTAuthenticator", phase(a.Status.Phase)}]++
		}
	}
	if webhooks, err := c.WebhookAuthenticators.List(labels.Everything()); err == nil {
		for _, a := range webhooks {
			phases[[2]string{"WebhookAuthenticator", phase(a.Status.Phase)}]++
		}
	}
	for k, n := range phases {
		ch <- metrics.NewLazyConstMetric(authenticatorsDesc, metrics.GaugeValue, float64(n), k[0], k[1])
	}
	for strategy, s := range c.Signers {
		if notAfter, ok := s.NotAfter(); ok {
			ch <- metrics.NewLazyConstMetric(signerExpiryDesc, metrics.GaugeValue, float64(notAfter.Unix()), strategy)
		}
	}
}

// phase is an authenticator's phase, Pending until its controller has set one.
func phase(p authv1alpha1.Phase) string {
	if p == "" {
		return string(authv1alpha1.PhasePending)
	}
	return string(p)
}

var registerOnce sync.Once

// Register adds c to the registry the API server serves at /metrics; later calls (a second
// server in one test binary) change nothing.
func Register(c *Collector) {
	registerOnce.Do(func() { legacyregistry.CustomMustRegister(c) })
}
