package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	"sealion.dev/core/testing/loadrun"
)

// authenticatorScale measures the exchange with one JWTAuthenticator while the cluster has
// counts of them (one of them measured, the others for other audiences of the same issuer), at
// 16 clients, and the Concierge's memory at each count: the cost of an organisation with many
// clusters' or teams' authenticators in one Concierge. The lookup is by name, so the rate should
// stay flat; the memory grows with each authenticator's verifier and keys. It also reports how
// long the authenticators added at each count took to be Ready (each fetches its issuer's
// discovery document and keys).
func authenticatorScale(t *testing.T, counts []int, spec authv1alpha1.JWTAuthenticatorSpec, measured func(context.Context, int) error) {
	const clients = 16
	// Unthrottled: a thousand creations at the client's default 5 a second would take minutes.
	cfg := rest.CopyConfig(env.cp.RESTConfig())
	cfg.QPS = -1
	client, err := conciergeclientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	authenticators := client.AuthenticationV1alpha1().JWTAuthenticators()
	t.Cleanup(func() {
		err := authenticators.DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: scaleLabel})
		if err != nil {
			t.Errorf("deleting the JWTAuthenticators of the scale run: %v", err)
		}
	})
	var atOne float64
	have := 1 // the measured one
	for _, n := range counts {
		start := time.Now()
		for ; have < n; have++ {
			a := &authv1alpha1.JWTAuthenticator{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-%d", have), Labels: map[string]string{scaleLabel: ""}},
				Spec:       *spec.DeepCopy(),
			}
			a.Spec.Audience = a.Name
			if _, err := authenticators.Create(context.Background(), a, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitForReadyJWTAuthenticators(t, n)
		ready := time.Since(start)
		r := step(t, fmt.Sprintf("TokenCredentialRequest with %d JWTAuthenticators", n), clients, measured)
		if atOne == 0 {
			atOne = r.Rate
		}
		mem, err := loadrun.MemoryOf(env.conciergePID)
		if err != nil {
			t.Fatal(err)
		}
		loadrun.Write(os.Stdout, fmt.Sprintf("ConciergeAuthenticators/authenticators=%d", n), r.Figures()...)
		loadrun.Write(os.Stdout, fmt.Sprintf("ConciergeAuthenticatorsOverOne/authenticators=%d", n), loadrun.Figure{Value: r.Rate / atOne, Unit: loadrun.Ratio})
		loadrun.Write(os.Stdout, fmt.Sprintf("ConciergeAuthenticatorsMemory/state=rss/authenticators=%d", n), loadrun.Figure{Value: mem.RSS, Unit: loadrun.MiB})
		loadrun.Write(os.Stdout, fmt.Sprintf("ConciergeAuthenticatorsReady/authenticators=%d", n), loadrun.Figure{Value: ready.Seconds(), Unit: loadrun.Seconds})
	}
}

// scaleLabel marks the JWTAuthenticators of the scale run, deleted together at its end.
const scaleLabel = "sealion.dev/load-scale"

// waitForReadyJWTAuthenticators waits until n JWTAuthenticators are Ready.
func waitForReadyJWTAuthenticators(t *testing.T, n int) {
	t.Helper()
	ready := 0
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := env.concierge.AuthenticationV1alpha1().JWTAuthenticators().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready = 0
		for _, a := range list.Items {
			if a.Status.Phase == authv1alpha1.PhaseReady {
				ready++
			}
		}
		return ready >= n, nil
	})
	if err != nil {
		t.Fatalf("%d of %d JWTAuthenticators Ready%s", ready, n, env.serverLogs())
	}
}

// counts parses a comma-separated list of counts ("1,10,100").
func counts(t *testing.T, list string) []int {
	t.Helper()
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || (len(out) > 0 && n <= out[len(out)-1]) {
			t.Fatalf("-load-authenticators %q: want increasing counts of 1 or more", list)
		}
		out = append(out, n)
	}
	return out
}
