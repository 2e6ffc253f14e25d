package connectors_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/connectorstest"
)

// An HTTPS upstream that accepts the connection and never answers the TLS handshake is given up
// on after the connect timeout, as unreachable, not after the request's whole timeout.
func TestHTTPTransportConnectTimeout(t *testing.T) {
	address := connectorstest.SilentUpstream(t)
	settings := connectors.Settings{ConnectTimeout: 200 * time.Millisecond}
	client := &http.Client{Transport: settings.HTTPTransport(&tls.Config{MinVersion: tls.VersionTLS12}), Timeout: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+address+"/.well-known/openid-configuration", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err == nil {
		_ = resp.Body.Close()
		t.Fatal("a silent upstream answered")
	}
	// Generous: the bound is the connect timeout's order, far below the request's minute.
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("gave up after %v, want about the 200ms connect timeout", took)
	}
	if !connectors.Unreachable(err) {
		t.Errorf("the timeout %v is not reported as unreachable", err)
	}
}
