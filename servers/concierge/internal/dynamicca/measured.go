package dynamicca

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	issued = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "pinniped",
		Subsystem:      "concierge",
		Name:           "client_certificates_issued_total",
		Help:           "Client certificates issued for TokenCredentialRequests, by the strategy that issued them and result (success or failure).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"strategy", "result"})
	issueDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "pinniped",
		Subsystem: "concierge",
		Name:      "client_certificate_issue_duration_seconds",
		Help:      "Time to issue a client certificate, by strategy: microseconds in process, the CertificateSigningRequest API's round trip for that strategy.",
		// From an in-process signature to the CertificateSigningRequest strategy's ten-second wait.
		Buckets:        []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		StabilityLevel: metrics.ALPHA,
	}, []string{"strategy"})
	registerOnce sync.Once
)

// RegisterMetrics adds the issuance metrics to the registry the API server serves at /metrics,
// the series of each of strategies at zero: rate() over a series born at 1 counts nothing, so the
// first certificates of a replica would never show.
func RegisterMetrics(strategies ...string) {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(issued, issueDuration)
		for _, s := range strategies {
			issued.WithLabelValues(s, "success")
			issued.WithLabelValues(s, "failure")
			issueDuration.WithLabelValues(s)
		}
	})
}

// Measured issues through Issuer and records each certificate it issues, or fails to, under
// Strategy (a CredentialIssuer strategy type): which strategy serves the exchanges, how fast, and
// how often it fails. An issuer that cannot issue now (ErrNoCA) is not counted: the chain goes on
// to the next.
type Measured struct {
	Strategy string
	Issuer   ClientCertIssuer
}

var _ ClientCertIssuer = Measured{}

// IssueClientCert issues through Issuer and records the outcome.
func (m Measured) IssueClientCert(ctx context.Context, username string, groups, organizationalUnits []string, ttl time.Duration) ([]byte, []byte, time.Time, error) {
	start := time.Now()
	certPEM, keyPEM, notAfter, err := m.Issuer.IssueClientCert(ctx, username, groups, organizationalUnits, ttl)
	if errors.Is(err, ErrNoCA) {
		return certPEM, keyPEM, notAfter, err
	}
	result := "success"
	if err != nil {
		result = "failure"
	}
	issued.WithLabelValues(m.Strategy, result).Inc()
	issueDuration.WithLabelValues(m.Strategy).Observe(time.Since(start).Seconds())
	return certPEM, keyPEM, notAfter, err
}
