package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"sealion.dev/core/servingcert"
)

// TestMetrics scrapes the Concierge's /metrics as the admin, trusting the CA its serving certificate
// controller published, and finds the exchange counters and latency histogram.
func TestMetrics(t *testing.T) {
	requireFailed(t, exchange(t, "JWTAuthenticator", "no-such-authenticator", "token"))

	secret, err := env.kube.CoreV1().Secrets(conciergeNamespace).Get(context.Background(), "pinniped-concierge-api-tls-serving-certificate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.cp.RESTConfig())
	cfg.Host = fmt.Sprintf("https://127.0.0.1:%d", env.conciergePort)
	cfg.CAData = secret.Data[servingcert.SecretKeyCACertificate]
	cfg.CAFile = ""
	cfg.ServerName = apiServiceName + "." + conciergeNamespace + ".svc"
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(cfg.Host + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s: %s", resp.Status, body)
	}
	for _, want := range []string{
		`pinniped_concierge_token_credential_requests_total{authenticator_kind="JWTAuthenticator",result="failure"}`,
		`pinniped_concierge_token_credential_request_duration_seconds_bucket{authenticator_kind="JWTAuthenticator",le="0.001"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
