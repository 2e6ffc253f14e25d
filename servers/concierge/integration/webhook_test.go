package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
)

// TestTokenCredentialRequestWebhook exchanges local-user-authenticator tokens (username:password).
func TestTokenCredentialRequestWebhook(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("correct horse"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	secrets := env.kube.CoreV1().Secrets(usersNamespace)
	user := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pinny"},
		Data:       map[string][]byte{"passwordHash": hash, "groups": []byte("seals,walruses")},
	}
	if _, err := secrets.Create(context.Background(), user, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), "pinny", metav1.DeleteOptions{}) })

	createWebhookAuthenticator(t, "local-users", authv1alpha1.WebhookAuthenticatorSpec{
		Endpoint: env.webhookURL,
		TLS:      &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(env.webhookCA)},
	})
	status := waitForWebhookStatus(t, "local-users", func(s authv1alpha1.WebhookAuthenticatorStatus) bool { return s.Phase == authv1alpha1.PhaseReady })
	for _, typ := range []string{"Ready", "TLSConfigurationValid", "EndpointURLValid", "WebhookConnectionValid", "AuthenticatorValid"} {
		if !hasCondition(typ, metav1.ConditionTrue, "Success")(status.Conditions) {
			t.Errorf("condition %s not true: %+v", typ, condition(status.Conditions, typ))
		}
	}

	t.Run("right password", func(t *testing.T) {
		username, groups := whoami(t, exchange(t, "WebhookAuthenticator", "local-users", "pinny:correct horse"))
		if username != "pinny" || !slices.Contains(groups, "seals") || !slices.Contains(groups, "walruses") {
			t.Errorf("kube-apiserver sees %q %v", username, groups)
		}
	})
	for name, token := range map[string]string{
		"wrong password": "pinny:battery staple",
		"unknown user":   "nobody:correct horse",
		"no colon":       "pinny",
	} {
		t.Run(name, func(t *testing.T) {
			requireFailed(t, exchange(t, "WebhookAuthenticator", "local-users", token))
		})
	}

	// As upstream, the endpoint is judged on its own when the CA data is not: status-watching
	// tools read EndpointURLValid.
	t.Run("invalid CA data, the endpoint judged on its own", func(t *testing.T) {
		for name, tc := range map[string]struct {
			endpoint, ca, status, reason, message string
		}{
			"not a certificate": {env.webhookURL, b64([]byte("not a PEM")), "True", "Success", "spec.endpoint is a valid URL"},
			"not base64":        {env.webhookURL, "%%%", "True", "Success", "spec.endpoint is a valid URL"},
			"and an endpoint without a host": {"https://", b64([]byte("not a PEM")), "False", "InvalidEndpointURL",
				"spec.endpoint URL is not valid: the URL has no host"},
		} {
			obj := "bad-ca-" + strings.ReplaceAll(name, " ", "-")
			createWebhookAuthenticator(t, obj, authv1alpha1.WebhookAuthenticatorSpec{Endpoint: tc.endpoint, TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: tc.ca}})
			waitForWebhookStatus(t, obj, func(s authv1alpha1.WebhookAuthenticatorStatus) bool {
				return s.Phase == authv1alpha1.PhaseError &&
					tlsInvalidURLJudged("EndpointURLValid", metav1.ConditionStatus(tc.status), tc.reason, tc.message, "WebhookConnectionValid")(s.Conditions)
			})
		}
	})

	t.Run("unreachable endpoint shows in status", func(t *testing.T) {
		createWebhookAuthenticator(t, "unreachable", authv1alpha1.WebhookAuthenticatorSpec{Endpoint: "https://127.0.0.1:1/authenticate"})
		waitForWebhookStatus(t, "unreachable", func(s authv1alpha1.WebhookAuthenticatorStatus) bool {
			return s.Phase == authv1alpha1.PhaseError && hasCondition("WebhookConnectionValid", metav1.ConditionFalse, "UnableToDialServer")(s.Conditions)
		})
	})
}
