package integration

import (
	"context"
	"testing"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	"sealion.dev/core/testing/metricstest"
	"sealion.dev/core/testing/oidcissuer"
)

// TestIdleConciergeWritesNothing: once its authenticators are Ready and it has served an
// exchange, a Concierge with nothing to do sends the kube-apiserver no writes but its leader
// election's (metricstest.WritesWhileIdle says why that matters and how it is seen).
func TestIdleConciergeWritesNothing(t *testing.T) {
	issuer := oidcissuer.New(t)
	createJWTAuthenticator(t, "idle-jwt", authv1alpha1.JWTAuthenticatorSpec{
		Issuer: issuer.Issuer, Audience: "idle", TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(issuer.CABundle)},
	})
	createWebhookAuthenticator(t, "idle-webhook", authv1alpha1.WebhookAuthenticatorSpec{
		Endpoint: env.webhookURL, TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(env.webhookCA)},
	})
	waitForJWTStatus(t, "idle-jwt", func(s authv1alpha1.JWTAuthenticatorStatus) bool { return s.Phase == authv1alpha1.PhaseReady })
	waitForWebhookStatus(t, "idle-webhook", func(s authv1alpha1.WebhookAuthenticatorStatus) bool { return s.Phase == authv1alpha1.PhaseReady })
	// An exchange, so that what serving one leaves behind is idle too.
	hash, err := bcrypt.GenerateFromPassword([]byte("correct horse"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	secrets := env.kube.CoreV1().Secrets(usersNamespace)
	user := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "idle-user"}, Data: map[string][]byte{"passwordHash": hash}}
	if _, err := secrets.Create(context.Background(), user, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), user.Name, metav1.DeleteOptions{}) })
	whoami(t, exchange(t, "WebhookAuthenticator", "idle-webhook", "idle-user:correct horse"))

	if err := metricstest.WritesWhileIdle(t, env.kube); err != nil {
		t.Errorf("%v%s", err, env.serverLogs())
	}
}
