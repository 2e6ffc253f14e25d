package credential_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"

	"sealion.dev/core/certauthority"
	"sealion.dev/servers/concierge/internal/authenticator/webhook"
	"sealion.dev/servers/concierge/internal/authncache"
	"sealion.dev/servers/concierge/internal/credential"
	"sealion.dev/servers/concierge/internal/dynamicca"
)

// BenchmarkExchange measures one TokenCredentialRequest inside the server, from token to signed
// certificate, on every core, and reports latency percentiles and exchanges per second.
func BenchmarkExchange(b *testing.B) {
	b.Run("jwt", func(b *testing.B) {
		e, key, issuer := jwtExchanger(b)
		token, err := issuer.Issue(map[string]any{"sub": "s", "aud": "cluster-a", "username": "alice", "groups": []string{"devs"}})
		if err != nil {
			b.Fatal(err)
		}
		runExchanges(b, e, key, token)
	})
	b.Run("webhook", func(b *testing.B) {
		e, key := webhookExchanger(b)
		runExchanges(b, e, key, "alice:pw")
	})
}

func runExchanges(b *testing.B, e *credential.Exchanger, key authncache.Key, token string) {
	var mu sync.Mutex
	var all []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			t0 := time.Now()
			if _, err := e.Exchange(context.Background(), key, token); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		all = append(all, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(len(all))/elapsed.Seconds(), "exchanges/s")
	}
}

// webhookExchanger uses the real webhook authenticator against a TokenReview server in the test
// that approves one user, so the numbers show our cost, not a password hash's.
func webhookExchanger(b *testing.B) (*credential.Exchanger, authncache.Key) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review authenticationv1.TokenReview
		_ = json.NewDecoder(r.Body).Decode(&review)
		review.Status = authenticationv1.TokenReviewStatus{Authenticated: review.Spec.Token == "alice:pw",
			User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"devs"}}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	b.Cleanup(srv.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, steps := webhook.New(ctx, webhook.Config{Endpoint: srv.URL, CABundle: caPEM, APIVersion: "v1"})
	if a == nil {
		b.Fatalf("building the webhook authenticator: %v", steps.Err())
	}
	ca, err := certauthority.New("bench signer", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	signer := dynamicca.New("bench signer")
	if err := signer.Set(ca.Bundle(), ca.PrivateKeyPEM()); err != nil {
		b.Fatal(err)
	}
	key := authncache.Key{APIGroup: "authentication.concierge.pinniped.dev", Kind: "WebhookAuthenticator", Name: "hook"}
	var cache authncache.Cache
	cache.Store(key, a)
	return &credential.Exchanger{Authenticators: &cache, Issuer: signer}, key
}
