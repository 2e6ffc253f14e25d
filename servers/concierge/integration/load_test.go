package integration

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	"sealion.dev/core/testing/oidcissuer"
)

var (
	load         = flag.Bool("load", false, "run the load test of TokenCredentialRequest through the aggregation layer (make bench)")
	loadDuration = flag.Duration("load-duration", 5*time.Second, "how long each load step runs")
)

// TestLoad exchanges tokens as fast as a number of concurrent clients can, through the real
// kube-apiserver aggregation layer, and prints latency percentiles, throughput and the Concierge's
// peak memory. It is a measurement, not a pass/fail timing: it fails only if an exchange fails.
func TestLoad(t *testing.T) {
	if !*load {
		t.Skip("load run is opt-in: go test -load (make bench runs it)")
	}
	issuer := oidcissuer.New(t)
	createJWTAuthenticator(t, "load-jwt", authv1alpha1.JWTAuthenticatorSpec{
		Issuer: issuer.Issuer, Audience: "cluster-a",
		TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(issuer.CABundle)},
	})
	waitForJWTStatus(t, "load-jwt", func(s authv1alpha1.JWTAuthenticatorStatus) bool { return s.Phase == authv1alpha1.PhaseReady })
	jwtToken, err := issuer.Issue(map[string]any{"sub": "s", "aud": "cluster-a", "username": "alice", "groups": []string{"devs"}}, oidcissuer.WithAlgorithm("ES256"))
	if err != nil {
		t.Fatal(err)
	}

	// The cheapest bcrypt cost, so the numbers show the exchange rather than password hashing.
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	secrets := env.kube.CoreV1().Secrets(usersNamespace)
	user := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "loaduser"}, Data: map[string][]byte{"passwordHash": hash, "groups": []byte("devs")}}
	if _, err := secrets.Create(context.Background(), user, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), "loaduser", metav1.DeleteOptions{}) })
	createWebhookAuthenticator(t, "load-webhook", authv1alpha1.WebhookAuthenticatorSpec{
		Endpoint: env.webhookURL, TLS: &authv1alpha1.TLSSpec{CertificateAuthorityData: b64(env.webhookCA)},
	})
	waitForWebhookStatus(t, "load-webhook", func(s authv1alpha1.WebhookAuthenticatorStatus) bool { return s.Phase == authv1alpha1.PhaseReady })

	var rows []string
	for _, c := range []struct {
		kind, name, token string
	}{
		{"JWTAuthenticator", "load-jwt", jwtToken},
		{"WebhookAuthenticator", "load-webhook", "loaduser:pw"},
	} {
		for _, clients := range []int{1, 16, 64} {
			r := runLoad(t, c.kind, c.name, c.token, clients, *loadDuration)
			rows = append(rows, fmt.Sprintf("| %s | %d | %d | %.2f | %.2f | %.0f |", c.kind, clients, r.count, ms(r.p50), ms(r.p99), r.rps))
		}
	}
	fmt.Printf("\nTokenCredentialRequest through the kube-apiserver aggregation layer (%s per step, this machine: %d cores)\n\n", *loadDuration, runtime.NumCPU())
	fmt.Println("| authenticator | clients | requests | p50 ms | p99 ms | req/s |")
	fmt.Println("|---|---|---|---|---|---|")
	fmt.Println(strings.Join(rows, "\n"))
	fmt.Printf("\nConcierge peak RSS (VmHWM): %s\n\n", peakRSS(env.conciergePID))
}

type loadResult struct {
	count    int
	p50, p99 time.Duration
	rps      float64
}

func runLoad(t *testing.T, kind, name, token string, clients int, d time.Duration) loadResult {
	req := &loginv1alpha1.TokenCredentialRequest{Spec: loginv1alpha1.TokenCredentialRequestSpec{
		Token:         token,
		Authenticator: corev1.TypedLocalObjectReference{APIGroup: ptr.To(authv1alpha1.GroupName), Kind: kind, Name: name},
	}}
	tcrs := env.anonymous.LoginV1alpha1().TokenCredentialRequests()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var all []time.Duration
	var failures int
	var firstFailure string
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			bad := 0
			for ctx.Err() == nil {
				t0 := time.Now()
				resp, err := tcrs.Create(ctx, req, metav1.CreateOptions{})
				if ctx.Err() != nil {
					break // the step ended during this request
				}
				if err != nil || resp.Status.Credential == nil {
					bad++
					mu.Lock()
					if firstFailure == "" {
						firstFailure = describeFailure(resp, err)
					}
					mu.Unlock()
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			all, failures = append(all, mine...), failures+bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if failures > 0 {
		t.Errorf("%s with %d clients: %d exchanges failed; the first: %s", kind, clients, failures, firstFailure)
	}
	if len(all) == 0 {
		t.Fatalf("%s with %d clients: no exchange completed", kind, clients)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return loadResult{count: len(all), p50: all[len(all)/2], p99: all[len(all)*99/100], rps: float64(len(all)) / elapsed.Seconds()}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// peakRSS reads the process's high-water mark of resident memory.
func peakRSS(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown: " + err.Error()
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func describeFailure(resp *loginv1alpha1.TokenCredentialRequest, err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Sprintf("%+v", status.Status())
	}
	if err != nil {
		return err.Error()
	}
	return "no credential: " + ptr.Deref(resp.Status.Message, "")
}
