package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

const conciergeDashboard = "../../servers/concierge/deploy/chart/files/dashboard.json"

// pod is one Concierge replica's metrics, declared as the servers declare them (names, labels
// and buckets of docs/reference/metrics.md), on a registry of its own.
type pod struct {
	name      string
	registry  *prometheus.Registry
	exchanges *prometheus.CounterVec
	failures  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
}

func newPod(name string, signerExpiry time.Time) *pod {
	p := &pod{name: name, registry: prometheus.NewRegistry()}
	p.exchanges = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pinniped_concierge_token_credential_requests_total"}, []string{"authenticator_kind", "result"})
	p.failures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pinniped_concierge_token_credential_request_failures_total"}, []string{"authenticator_kind", "reason"})
	p.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pinniped_concierge_token_credential_request_duration_seconds", Buckets: []float64{0.001, 0.01, 0.1, 1}}, []string{"authenticator_kind"})
	strategy := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pinniped_concierge_strategy_status"}, []string{"strategy", "status"})
	strategy.WithLabelValues("KubeClusterSigningCertificate", "Success").Set(1)
	strategy.WithLabelValues("ImpersonationProxy", "Error").Set(1)
	expiry := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pinniped_concierge_signer_expiry_timestamp_seconds"}, []string{"signer"})
	expiry.WithLabelValues("kube-cluster-signing").Set(float64(signerExpiry.Unix()))
	p.registry.MustRegister(p.exchanges, p.failures, p.latency, strategy, expiry)
	// As the Concierge serves them: every series of the authenticator kinds from the start, at zero.
	for _, kind := range []string{"JWTAuthenticator", "WebhookAuthenticator"} {
		p.exchanges.WithLabelValues(kind, "success")
		p.exchanges.WithLabelValues(kind, "failure")
		p.latency.WithLabelValues(kind)
		for _, reason := range []string{"authenticator_error", "not_authenticated"} {
			p.failures.WithLabelValues(kind, reason)
		}
	}
	return p
}

// scrape writes what a scrape of the pod at t would have read, named as the demo names it.
func (p *pod) scrape(t *testing.T, dir string, at time.Time) {
	t.Helper()
	families, err := p.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d-%s.txt", at.UnixMilli(), p.name)), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A demo's logins, scraped every 5 s from two replicas, show on the Concierge's dashboard: the
// exchanges by authenticator kind, the refusal by reason, the latency, the working strategy and
// the signer's expiry; the proxy's panels say No data. The PNG has the dashboard's grid.
func TestConciergeDashboardShowsLogins(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 12, 6, 18, 0, 0, 0, time.UTC)
	expiry := start.Add(24 * time.Hour)
	a, b := newPod("pinniped-concierge-a", expiry), newPod("pinniped-concierge-b", expiry)
	for i := range 13 { // 0 s to 60 s
		at := start.Add(time.Duration(i) * 5 * time.Second)
		switch i {
		case 4, 6: // two password logins at 20 s and 30 s
			a.exchanges.WithLabelValues("WebhookAuthenticator", "success").Inc()
			a.latency.WithLabelValues("WebhookAuthenticator").Observe(0.05)
		case 7: // a browser login at 35 s, on the other replica
			b.exchanges.WithLabelValues("JWTAuthenticator", "success").Inc()
			b.latency.WithLabelValues("JWTAuthenticator").Observe(0.005)
		case 8: // a wrong password at 40 s
			a.exchanges.WithLabelValues("WebhookAuthenticator", "failure").Inc()
			a.failures.WithLabelValues("WebhookAuthenticator", "not_authenticated").Inc()
		}
		a.scrape(t, dir, at)
		b.scrape(t, dir, at)
	}
	out := filepath.Join(t.TempDir(), "concierge.png")
	var summary bytes.Buffer
	if err := run(context.Background(), conciergeDashboard, dir, out, &summary); err != nil {
		t.Fatal(err)
	}

	board, err := readDashboard(conciergeDashboard)
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := readScrapes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if recorded.interval != 5*time.Second || recorded.rateInterval() != 20*time.Second {
		t.Errorf("scrape interval %v, rate interval %v; want 5s and 20s", recorded.interval, recorded.rateInterval())
	}
	panels, err := evaluate(context.Background(), board, recorded)
	if err != nil {
		t.Fatal(err)
	}
	byTitle := map[string]panel{}
	for _, p := range panels {
		byTitle[p.title] = p
	}

	exchanges := lines(byTitle["Exchanges"])
	webhook := exchanges["WebhookAuthenticator success"]
	// A rate needs two scrapes: a point from 5 s on, the first login's at 20 s (index 3).
	if len(webhook) != 12 || webhook[0] != 0 || webhook[2] != 0 || webhook[3] == 0 {
		t.Errorf("webhook successes %v: want 12 points, none before the first login at 20 s", webhook)
	}
	// Two logins 10 s apart, inside a 20 s window: rate() extrapolates, so between 1 and 2 per 20 s.
	if peak := slicesMax(webhook); peak < 1.0/20 || peak > 2.0/20 {
		t.Errorf("webhook successes peak at %v/s; want between 0.05 and 0.1", peak)
	}
	if slicesMax(exchanges["JWTAuthenticator success"]) <= 0 || slicesMax(exchanges["WebhookAuthenticator failure"]) <= 0 {
		t.Errorf("exchanges %v: want the browser login and the refusal", keys(exchanges))
	}
	refusals := lines(byTitle["Refusals by reason"])
	if slicesMax(refusals["not_authenticated"]) <= 0 || slicesMax(refusals["authenticator_error"]) != 0 {
		t.Errorf("refusals %v: want not_authenticated alone", refusals)
	}
	latency := lines(byTitle["Exchange latency"])
	if p99 := slicesMax(latency["p99"]); p99 <= 0.01 || p99 > 0.1 {
		t.Errorf("p99 latency peaks at %v s; the slow logins took 50 ms (bucket 10-100 ms)", p99)
	}
	if v := byTitle["Working strategies"].values; len(v) != 1 || v[0].v != 1 {
		t.Errorf("working strategies %v, want 1", v)
	}
	if v := byTitle["Signer expires in"].values; len(v) != 1 || math.Abs(v[0].v-(24*time.Hour-time.Minute).Seconds()) > 1 {
		t.Errorf("signer expires in %v, want 23h59m at the last scrape", v)
	}
	for _, title := range []string{"Proxy requests by code", "Proxy latency (p99)", "Proxy requests in flight"} {
		if got := byTitle[title].latest(); got != "no data" {
			t.Errorf("%s shows %q; no request went through the proxy", title, got)
		}
	}
	if !strings.Contains(summary.String(), "Exchanges: JWTAuthenticator success 0 req/s (peak 0.05 req/s); WebhookAuthenticator failure") ||
		!strings.Contains(summary.String(), "Working strategies: strategies 1\n") {
		t.Errorf("summary:\n%s", summary.String())
	}

	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// 24 columns of 50 points at vgimg's 96 dpi; the header and the grid's 49 rows (the last
	// panels at row 41, 8 high).
	if got := img.Bounds().Size(); got.X != 1600 || got.Y != int(math.Ceil(float64(headerH+49*rowH)*96/72)) {
		t.Errorf("PNG of %v", got)
	}
}

// Scrapes the renderer cannot use are refused with the file's name, not drawn as an empty board.
func TestRefusesScrapes(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"one scrape":     {"1000-a.txt": "x 1\n"},
		"unnamed":        {"scrape.txt": "x 1\n", "2000-a.txt": "x 1\n"},
		"not the format": {"1000-a.txt": "x 1\n", "2000-a.txt": "x{ 1\n"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for f, body := range files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := readScrapes(dir); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func lines(p panel) map[string][]float64 {
	out := map[string][]float64{}
	for _, l := range p.lines {
		for _, pt := range l.points {
			out[l.label] = append(out[l.label], pt.V)
		}
	}
	return out
}

func slicesMax(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func keys(m map[string][]float64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
