package dynamicca

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"

	"sealion.dev/core/certauthority"
	"sealion.dev/core/testing/metricstest"
)

// failing answers err to every request.
type failing struct{ err error }

func (f failing) IssueClientCert(context.Context, string, []string, []string, time.Duration) ([]byte, []byte, time.Time, error) {
	return nil, nil, time.Time{}, f.err
}

// A chain of measured issuers counts each certificate under the strategy that issued it, and each
// failure under the one that failed; an issuer with nothing loaded is passed over uncounted.
func TestMeasured(t *testing.T) {
	registerStrategies()
	ca, err := certauthority.New("cluster", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	agent := New("agent")
	if err := agent.Set(ca.Bundle(), ca.PrivateKeyPEM()); err != nil {
		t.Fatal(err)
	}
	chain := FirstLoaded{
		Measured{Strategy: "CertificateSigningRequest", Issuer: failing{ErrNoCA}},
		Measured{Strategy: "KubeClusterSigningCertificate", Issuer: agent},
		Measured{Strategy: "ImpersonationProxy", Issuer: New("proxy")},
	}
	count := func(strategy, result string) float64 {
		v, err := testutil.GetCounterMetricValue(issued.WithLabelValues(strategy, result))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	samples := func(strategy string) uint64 {
		n, err := testutil.GetHistogramMetricCount(issueDuration.WithLabelValues(strategy))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for range 3 {
		if _, _, _, err := chain.IssueClientCert(context.Background(), "pinny", nil, nil, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	failed := Measured{Strategy: "CertificateSigningRequest", Issuer: failing{errors.New("the signer did not issue the certificate in time")}}
	if _, _, _, err := failed.IssueClientCert(context.Background(), "pinny", nil, nil, time.Minute); err == nil {
		t.Fatal("a failure was not passed on")
	}
	for _, c := range []struct {
		strategy, result string
		want             float64
	}{
		{"KubeClusterSigningCertificate", "success", 3},
		{"CertificateSigningRequest", "success", 0},
		{"CertificateSigningRequest", "failure", 1},
		{"ImpersonationProxy", "success", 0},
	} {
		if got := count(c.strategy, c.result); got != c.want {
			t.Errorf("issued{strategy=%s,result=%s} = %v, want %v", c.strategy, c.result, got, c.want)
		}
	}
	if agentTimes, csrTimes, proxyTimes := samples("KubeClusterSigningCertificate"), samples("CertificateSigningRequest"), samples("ImpersonationProxy"); agentTimes != 3 || csrTimes != 1 || proxyTimes != 0 {
		t.Errorf("durations observed: agent %d, CSR %d, proxy %d; want 3, 1, 0", agentTimes, csrTimes, proxyTimes)
	}
}

// registerStrategies registers the metrics as the Concierge does; component-base metrics count
// nothing until registered, and only the first registration counts.
func registerStrategies() {
	RegisterMetrics("CertificateSigningRequest", "KubeClusterSigningCertificate", "ImpersonationProxy")
}

// Each strategy's series are served from the start, at zero, so that rate() sees its first
// certificate.
func TestStrategiesServedAtZero(t *testing.T) {
	registerStrategies()
	for _, strategy := range []string{"CertificateSigningRequest", "KubeClusterSigningCertificate", "ImpersonationProxy"} {
		for _, result := range []string{"success", "failure"} {
			if !metricstest.HasSeries(t, "pinniped_concierge_client_certificates_issued_total", map[string]string{"strategy": strategy, "result": result}) {
				t.Errorf("no series for %s %s", strategy, result)
			}
		}
	}
}
