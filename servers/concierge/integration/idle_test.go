package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	"sealion.dev/core/testing/oidcissuer"
)

// TestIdleConciergeWritesNothing: once its authenticators are Ready, a Concierge with nothing to
// do sends the kube-apiserver no writes but its leader election's. Its clients have no
// client-side rate limit (serverboot.KubeRESTConfig), so a controller that rewrote its objects
// in a loop would take what the API server's priority and fairness allows it, and nothing else
// would show it. The kube-apiserver's own request counter sees every writer in this environment
// (there is no controller manager), by resource.
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

	// Writes that follow from the set-up (a status catching up) may come for a few seconds; a
	// loop never stops. So the test passes at the first quiet window, and fails when a minute
	// has none.
	const window, patience = 15 * time.Second, time.Minute
	before := writeRequests(t)
	var seen map[string]float64
	for deadline := time.Now().Add(patience); time.Now().Before(deadline); {
		time.Sleep(window)
		after := writeRequests(t)
		seen = map[string]float64{}
		for k, n := range after {
			if d := n - before[k]; d > 0 {
				seen[k] = d
			}
		}
		if len(seen) == 0 {
			return
		}
		before = after
	}
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		lines = append(lines, fmt.Sprintf("%s: %.0f", k, seen[k]))
	}
	t.Errorf("in every %s of a minute with nothing to do, the kube-apiserver served writes; in the last:\n%s%s", window, strings.Join(lines, "\n"), env.serverLogs())
}

// writeRequests reads the kube-apiserver's count of the writes it served, by verb, resource and
// subresource, but for leases (the leader renews its own every few seconds, as it should) and
// reviews, which store nothing: the Concierge asks a SubjectAccessReview of the requests it
// serves, such as the aggregator's discovery of its APIs.
func writeRequests(t *testing.T) map[string]float64 {
	t.Helper()
	raw, err := env.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("reading the kube-apiserver's metrics: %v", err)
	}
	counts := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		labels, value, found := strings.Cut(rest, "} ")
		if !ok || !found {
			continue
		}
		verb, group, resource, subresource := label(labels, "verb"), label(labels, "group"), label(labels, "resource"), label(labels, "subresource")
		if !slices.Contains([]string{"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}, verb) || resource == "leases" || strings.HasSuffix(resource, "reviews") {
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		counts[strings.TrimSuffix(fmt.Sprintf("%s %s.%s/%s", verb, resource, group, subresource), "/")] += n
	}
	return counts
}

// label is the value of one label in a metric line's labels (`a="x",b="y"`), empty when absent.
func label(labels, name string) string {
	_, v, ok := strings.Cut(","+labels, ","+name+`="`)
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, `"`)
	return v
}
