package integration

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// A replica started while a FederationDomain exists reports itself ready only once it serves that
// issuer: a Service that sends requests by readiness never sends it one it would answer with a
// 404 or the bootstrap certificate. Found as a fault test's failed refreshes after a pod restart.
func TestNewReplicaIsReadyOnlyOnceItServes(t *testing.T) {
	issuer := createLDAPIssuer(t, "readiness", "readiness.example.test", "ready")
	roots := x509.NewCertPool()
	roots.AddCert(env.ca.Certificate())
	discovery := issuer + "/.well-known/openid-configuration"
	status := func(p *supervisorProcess, url string) string {
		resp, err := p.httpClient(roots).Get(url)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("%d %s", resp.StatusCode, body)
		}
		return "200"
	}
	eventually(t, "the first replica serves the issuer", func() error {
		if got := status(env.supervisorProcess, discovery); got != "200" {
			return fmt.Errorf("discovery: %s", got)
		}
		return nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	second, err := env.startSupervisor(ctx, "second-replica", "")
	if second != nil {
		t.Cleanup(second.stop)
	}
	if err != nil {
		t.Fatalf("starting a second replica: %v%s", err, second.serverLog())
	}
	// The readiness probe's own view (any host name, any certificate), then at once the issuer.
	insecure := second.httpClient(nil)
	unready := 0
	for {
		if ctx.Err() != nil {
			t.Fatalf("the second replica never became ready (%d probes said not ready)%s", unready, second.serverLog())
		}
		resp, err := insecure.Get("https://anything.example.test/readyz")
		if err != nil {
			t.Fatalf("/readyz: %v", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		unready++
		time.Sleep(10 * time.Millisecond)
	}
	if got := status(second, discovery); got != "200" {
		t.Errorf("the second replica reported ready but answers its issuer's discovery with %s%s", got, second.serverLog())
	}
	t.Logf("%d probes said not ready before the replica was", unready)
}
