package conformance

import (
	"context"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"sealion.dev/core/testing/metricstest"
	"sealion.dev/e2e/steps"
)

// TestMetricsThroughServices scrapes every server's /metrics as Prometheus does through the
// charts' ServiceMonitors: each pod behind the Service, HTTPS verified against the CA the server
// publishes for the Service's name, with a ServiceAccount token allowed get on /metrics and nothing
// else. Every documented metric of a server that a freshly used installation has is there, every
// metric served is documented, the exchange counters move with an exchange and a refusal, and a
// token without the permission is refused.
func TestMetricsThroughServices(t *testing.T) {
	var kube kubernetes.Interface
	var allowed, denied string
	var targets []steps.ScrapeTarget
	f := features.New("metrics through the Services, as Prometheus scrapes them").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kube = kubeClient(t, cfg)
			setUpLocalUsers(ctx, t, cfg)
			var err error
			if allowed, err = steps.MetricsReaderToken(ctx, kube, true); err != nil {
				t.Fatal(err)
			}
			if denied, err = steps.MetricsReaderToken(ctx, kube, false); err != nil {
				t.Fatal(err)
			}
			inst := underTest(ctx)
			targets = []steps.ScrapeTarget{steps.ServerMetrics("Concierge", inst.Concierge)}
			if inst.Supervisor != nil {
				supervisorHost(ctx, t, cfg) // installs it where no test has yet
				targets = append(targets, steps.ServerMetrics("Supervisor", *inst.Supervisor))
			}
			targets = append(targets, steps.LocalUserAuthenticatorMetrics)
			return ctx
		}).
		Assess("a token without get on /metrics is refused", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, target := range targets {
				if !target.Authorized {
					continue
				}
				if _, status := scrapeAll(ctx, t, cfg, kube, target, denied); status != http.StatusForbidden {
					t.Errorf("%s: a token without the permission got %d, want 403", target.Title, status)
				}
				if _, status := scrapeAll(ctx, t, cfg, kube, target, ""); status != http.StatusForbidden && status != http.StatusUnauthorized {
					t.Errorf("%s: no token got %d, want 401 or 403", target.Title, status)
				}
			}
			return ctx
		}).
		Assess("the exchange counters move with an exchange and a refusal", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			concierge, users := targets[0], targets[len(targets)-1]
			before := scrapeOK(ctx, t, cfg, kube, concierge, allowed)
			reviewsBefore := scrapeOK(ctx, t, cfg, kube, users, "")
			if resp := kubectlExchange(ctx, t, cfg, "pinny:correct horse", "WebhookAuthenticator", "local-users"); resp.Status.Credential == nil {
				t.Fatalf("no credential: %v", resp.Status.Message)
			}
			if resp := kubectlExchange(ctx, t, cfg, "pinny:battery staple", "WebhookAuthenticator", "local-users"); resp.Status.Credential != nil {
				t.Fatal("a wrong password got a credential")
			}
			after := scrapeOK(ctx, t, cfg, kube, concierge, allowed)
			reviewsAfter := scrapeOK(ctx, t, cfg, kube, users, "")
			for _, c := range []struct {
				families map[string]*dto.MetricFamily
				was      map[string]*dto.MetricFamily
				name     string
				labels   map[string]string
			}{
				{after, before, "pinniped_concierge_token_credential_requests_total", map[string]string{"authenticator_kind": "WebhookAuthenticator", "result": "success"}},
				{after, before, "pinniped_concierge_token_credential_requests_total", map[string]string{"authenticator_kind": "WebhookAuthenticator", "result": "failure"}},
				{after, before, "pinniped_concierge_token_credential_request_failures_total", map[string]string{"authenticator_kind": "WebhookAuthenticator", "reason": "not_authenticated"}},
				{after, before, "pinniped_concierge_client_certificates_issued_total", map[string]string{"result": "success"}},
				{after, before, "pinniped_concierge_authenticator_upstream_requests_total", map[string]string{"authenticator_kind": "WebhookAuthenticator", "result": "success"}},
				{reviewsAfter, reviewsBefore, "pinniped_local_user_authenticator_token_reviews_total", map[string]string{"result": "authenticated"}},
				{reviewsAfter, reviewsBefore, "pinniped_local_user_authenticator_token_reviews_total", map[string]string{"result": "refused"}},
			} {
				if was, is := sum(c.was, c.name, c.labels), sum(c.families, c.name, c.labels); is < was+1 {
					t.Errorf("%s%v went from %v to %v over the exchanges", c.name, c.labels, was, is)
				}
			}
			return ctx
		}).
		Assess("every documented metric is served, and every metric served is documented", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			documented := documentedMetrics(t)
			proxy := proxyServes(steps.ClusterFrom(ctx).Info)
			for _, target := range targets {
				token := ""
				if target.Authorized {
					token = allowed
				}
				families := scrapeOK(ctx, t, cfg, kube, target, token)
				if target.Title == "Supervisor" {
					// The leader's collector sweeps every 30 s: its counters appear with its first sweep.
					err := wait.PollUntilContextTimeout(ctx, 5*time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
						families = scrapeOK(ctx, t, cfg, kube, target, token)
						return sum(families, "pinniped_supervisor_session_garbage_collections_total", nil) > 0, nil
					})
					if err != nil {
						t.Errorf("Supervisor: no garbage collection sweep counted in a minute")
					}
				}
				for name := range families {
					if strings.HasPrefix(name, "pinniped_") && documented[name] == "" {
						t.Errorf("%s serves %s, which docs/reference/metrics.md does not list", target.Title, name)
					}
				}
				for name, server := range documented {
					if !strings.Contains(server, target.Title) || families[name] != nil {
						continue
					}
					if why := notYetServed(name, proxy); why != "" {
						t.Logf("%s: %s not served yet, as expected: %s", target.Title, name, why)
						continue
					}
					t.Errorf("%s does not serve %s", target.Title, name)
				}
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			steps.DeleteMetricsReaders(ctx, kube)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// notYetServed says why a documented metric may be missing from a server the suite has just
// used: its series appear with the event they count, which this test does not cause.
func notYetServed(name string, proxyServes bool) string {
	switch {
	case strings.HasPrefix(name, "pinniped_concierge_impersonation_proxy_") && !proxyServes:
		return "the impersonation proxy does not serve on this cluster"
	case strings.HasPrefix(name, "pinniped_concierge_impersonation_proxy_request"):
		return "no request has been sent through the proxy by this test"
	case name == "pinniped_requests_rejected_total":
		return "no request was refused by an in-flight limit (429)"
	case strings.HasPrefix(name, "pinniped_supervisor_token_request"), strings.HasPrefix(name, "pinniped_supervisor_upstream_request"):
		return "no login through the Supervisor in this test"
	case name == "pinniped_supervisor_signing_key_generated_timestamp_seconds":
		return "it has a series per FederationDomain, and this test makes none"
	}
	return ""
}

// documentedMetrics reads docs/reference/metrics.md: each metric and the title of the section
// (the server) that lists it.
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(steps.RepoPath("docs/reference/metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	section := ""
	row := regexp.MustCompile("^\\| `(pinniped_[a-z_]+)` \\|")
	for _, line := range strings.Split(string(data), "\n") {
		if title, ok := strings.CutPrefix(line, "## "); ok {
			section = title
		}
		if m := row.FindStringSubmatch(line); m != nil {
			out[m[1]] = section
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d metrics in docs/reference/metrics.md", len(out))
	}
	return out
}

// scrapeOK scrapes every pod of target and fails unless each answered 200.
func scrapeOK(ctx context.Context, t *testing.T, cfg *envconf.Config, kube kubernetes.Interface, target steps.ScrapeTarget, token string) map[string]*dto.MetricFamily {
	t.Helper()
	families, status := scrapeAll(ctx, t, cfg, kube, target, token)
	if status != http.StatusOK {
		t.Fatalf("%s: /metrics answered %d", target.Title, status)
	}
	return families
}

// scrapeAll scrapes /metrics of every pod behind target's Service and returns the families of all
// pods together and the worst status.
func scrapeAll(ctx context.Context, t *testing.T, cfg *envconf.Config, kube kubernetes.Interface, target steps.ScrapeTarget, token string) (map[string]*dto.MetricFamily, int) {
	t.Helper()
	scrapes, err := steps.Scrape(ctx, cfg.Client().RESTConfig(), kube, target, token)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]*dto.MetricFamily{}
	worst := 0
	for _, s := range scrapes {
		worst = max(worst, s.Status)
		if s.Status != http.StatusOK {
			continue
		}
		families, err := metricstest.Parse(s.Body)
		if err != nil {
			t.Fatalf("scraping %s: %v", s.Pod, err)
		}
		for name, f := range families {
			if all[name] == nil {
				all[name] = &dto.MetricFamily{Name: f.Name, Type: f.Type}
			}
			all[name].Metric = append(all[name].Metric, f.Metric...)
		}
	}
	return all, worst
}

// sum adds the values of the counter or gauge series of name whose labels include want.
func sum(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	total := 0.0
	for _, m := range families[name].GetMetric() {
		if metricstest.Matches(m, want) {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}
