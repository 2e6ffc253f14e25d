package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	"sealion.dev/core/servingcert"
)

// TestMetrics scrapes the Concierge's /metrics as the admin, trusting the CA its serving certificate
// controller published, after one refused and one successful exchange, and finds the exchange
// counters by result and reason, the latency histogram, the certificate issued by the strategy
// that signed it, and the state: strategies, authenticators by phase, the signer's expiry.
func TestMetrics(t *testing.T) {
	requireFailed(t, exchange(t, "JWTAuthenticator", "no-such-authenticator", "token"))
	hash, err := bcrypt.GenerateFromPassword([]byte("correct horse"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	secrets := env.kube.CoreV1().Secrets(usersNamespace)
	user := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "metrics-user"}, Data: map[string][]byte{"passwordHash": hash, "groups": []byte("seals")}}
	if _, err := secrets.Create(context.Background(), user, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), user.Name, metav1.DeleteOptions{}) })
	createWebhookAuthenticator(t, "metrics-users", authv1alpha1.WebhookAuthenticatorSpec{
		Endpoint: env.webhookURL, TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(env.webhookCA)},
	})
	waitForWebhookStatus(t, "metrics-users", func(s authv1alpha1.WebhookAuthenticatorStatus) bool { return s.Phase == authv1alpha1.PhaseReady })
	whoami(t, exchange(t, "WebhookAuthenticator", "metrics-users", "metrics-user:correct horse"))

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
		`pinniped_concierge_token_credential_requests_total{authenticator_kind="WebhookAuthenticator",result="success"}`,
		`pinniped_concierge_token_credential_request_duration_seconds_bucket{authenticator_kind="JWTAuthenticator",le="0.001"}`,
		`pinniped_concierge_token_credential_request_failures_total{authenticator_kind="JWTAuthenticator",reason="authenticator_error"}`,
		// This Concierge signs with a CA it is given, as the kube cert agent signs with the cluster's.
		`pinniped_concierge_client_certificates_issued_total{result="success",strategy="KubeClusterSigningCertificate"}`,
		`pinniped_concierge_client_certificate_issue_duration_seconds_bucket{strategy="KubeClusterSigningCertificate",le="0.01"}`,
		`pinniped_concierge_authenticators{kind="WebhookAuthenticator",phase="Ready"}`,
		`pinniped_concierge_signer_expiry_timestamp_seconds{strategy="KubeClusterSigningCertificate"}`,
		`pinniped_concierge_strategy_status{reason=`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
