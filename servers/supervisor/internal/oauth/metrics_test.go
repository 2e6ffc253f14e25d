package oauth

import (
	"errors"
	"net/http"
	"testing"

	"golang.org/x/oauth2"
	"k8s.io/component-base/metrics/legacyregistry"

	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/oauth/token"
)

// tokenRequests reads pinniped_supervisor_token_requests_total for the harness's FederationDomain
// (named fd), by "grant_type/identity_provider_type/result".
func tokenRequests(t *testing.T) map[string]float64 {
	t.Helper()
	return gathered(t, "pinniped_supervisor_token_requests_total", func(l map[string]string) string {
		if l["federation_domain"] != "fd" {
			return ""
		}
		return l["grant_type"] + "/" + l["identity_provider_type"] + "/" + l["result"]
	})
}

// upstreamRequests reads pinniped_supervisor_upstream_requests_total by
// "identity_provider_type/operation/result".
func upstreamRequests(t *testing.T) map[string]float64 {
	t.Helper()
	return gathered(t, "pinniped_supervisor_upstream_requests_total", func(l map[string]string) string {
		return l["identity_provider_type"] + "/" + l["operation"] + "/" + l["result"]
	})
}

// gathered reads the counter name from the registry, each series under the key its labels give
// (none when the key is empty).
func gathered(t *testing.T, name string, key func(map[string]string) string) map[string]float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if k := key(labels); k != "" {
				counts[k] = m.GetCounter().GetValue()
			}
		}
	}
	return counts
}

// A login's code redemption, a token exchange and a refresh the upstream refuses are each
// counted by grant, identity provider type and result, and the upstream's part (the browser
// login's code, the refused refresh) by operation and result.
func TestTokenEndpointMetrics(t *testing.T) {
	token.RegisterMetrics() // component-base metrics count nothing until registered
	connectors.RegisterMetrics()
	h := newHarness(t, nil)
	before, upstreamBefore := tokenRequests(t), upstreamRequests(t)
	l := h.login()
	tok, err := h.cli().Exchange(h.clientContext(), l.code, oauth2.VerifierOption(l.verifier))
	if err != nil {
		t.Fatal(err)
	}
	if status, body := h.exchange(tok.AccessToken, "cluster-1"); status != http.StatusOK {
		t.Fatalf("token exchange: %d %v", status, body)
	}
	h.upstream.mu.Lock()
	h.upstream.refuseRefresh = true
	h.upstream.mu.Unlock()
	_, err = h.cli().TokenSource(h.clientContext(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if re := (*oauth2.RetrieveError)(nil); !errors.As(err, &re) {
		t.Fatalf("refresh the upstream refused: %v", err)
	}
	after, upstreamAfter := tokenRequests(t), upstreamRequests(t)
	for series, want := range map[string]float64{"oidc/exchange/success": 1, "oidc/refresh/refused": 1} {
		if got := upstreamAfter[series] - upstreamBefore[series]; got != want {
			t.Errorf("upstream_requests_total{%s} grew by %v, want %v (all: %v)", series, got, want, upstreamAfter)
		}
	}
	for series, want := range map[string]float64{
		"authorization_code/oidc/success":  1,
		"token_exchange/oidc/success":      1,
		"refresh_token/oidc/invalid_grant": 1,
	} {
		if got := after[series] - before[series]; got != want {
			t.Errorf("token_requests_total{%s} grew by %v, want %v (all: %v)", series, got, want, after)
		}
	}
}
