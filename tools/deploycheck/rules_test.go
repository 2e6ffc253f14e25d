package deploycheck

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"sealion.dev/tools/internal/promseries"
)

// The charts' alert rule files, in Prometheus' format.
var ruleFiles = map[string]string{
	conciergeChart:  conciergeChart + "/files/prometheus-rules.yaml",
	supervisorChart: supervisorChart + "/files/prometheus-rules.yaml",
}

// parseRules reads a rule file as promtool check rules does: strict YAML, every expression and
// annotation template parsed, names valid.
func parseRules(t *testing.T, data []byte) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.Parse(data, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Error(err)
	}
	if groups == nil || len(groups.Groups) == 0 {
		t.Fatal("no rule groups")
	}
	return groups
}

// decodePrometheusRule checks a rendered PrometheusRule's spec as a rule file.
func decodePrometheusRule(t *testing.T, obj *unstructured.Unstructured) *rulefmt.RuleGroups {
	t.Helper()
	spec, err := yaml.Marshal(obj.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	return parseRules(t, spec)
}

// alertScenarios are, for each alert, series (promqltest's notation, one sample a minute for 20
// minutes) on which it fires and series on which it must not: each rule is evaluated, not only
// parsed.
var alertScenarios = map[string]struct{ firing, healthy string }{
	"PinnipedConciergeExchangeErrors": {
		firing: `pinniped_concierge_token_credential_requests_total{namespace="p",authenticator_kind="JWTAuthenticator",result="success"} 0+50x20
			pinniped_concierge_token_credential_requests_total{namespace="p",authenticator_kind="JWTAuthenticator",result="failure"} 0+10x20
			pinniped_concierge_token_credential_request_failures_total{namespace="p",authenticator_kind="JWTAuthenticator",reason="authenticator_error"} 0+10x20`,
		// As many refusals, all of them users' wrong credentials.
		healthy: `pinniped_concierge_token_credential_requests_total{namespace="p",authenticator_kind="JWTAuthenticator",result="success"} 0+50x20
			pinniped_concierge_token_credential_requests_total{namespace="p",authenticator_kind="JWTAuthenticator",result="failure"} 0+10x20
			pinniped_concierge_token_credential_request_failures_total{namespace="p",authenticator_kind="JWTAuthenticator",reason="not_authenticated"} 0+10x20`,
	},
	"PinnipedConciergeAuthenticatorUpstreamErrors": {
		firing: `pinniped_concierge_authenticator_upstream_requests_total{namespace="p",authenticator_kind="WebhookAuthenticator",result="error"} 0+1x20`,
		healthy: `pinniped_concierge_authenticator_upstream_requests_total{namespace="p",authenticator_kind="WebhookAuthenticator",result="error"} 0x20
			pinniped_concierge_authenticator_upstream_requests_total{namespace="p",authenticator_kind="WebhookAuthenticator",result="success"} 0+5x20`,
	},
	"PinnipedConciergeAuthenticatorNotReady": {
		firing: `pinniped_concierge_authenticators{namespace="p",kind="JWTAuthenticator",phase="Error"} 1x20`,
		healthy: `pinniped_concierge_authenticators{namespace="p",kind="JWTAuthenticator",phase="Error"} 0x20
			pinniped_concierge_authenticators{namespace="p",kind="JWTAuthenticator",phase="Ready"} 2x20`,
	},
	"PinnipedConciergeNoStrategy": {
		firing: `pinniped_concierge_strategy_status{namespace="p",strategy="KubeClusterSigningCertificate",status="Error",reason="CouldNotFetchKey"} 1x20
			pinniped_concierge_strategy_status{namespace="p",strategy="ImpersonationProxy",status="Error",reason="ErrorDuringSetup"} 1x20`,
		healthy: `pinniped_concierge_strategy_status{namespace="p",strategy="KubeClusterSigningCertificate",status="Error",reason="CouldNotFetchKey"} 1x20
			pinniped_concierge_strategy_status{namespace="p",strategy="ImpersonationProxy",status="Success",reason="Listening"} 1x20`,
	},
	"PinnipedConciergeSignerExpiresSoon": {
		// Evaluated at 20 minutes (time() = 1200): a day left, then thirty.
		firing:  `pinniped_concierge_signer_expiry_timestamp_seconds{namespace="p",strategy="ImpersonationProxy"} 87600x20`,
		healthy: `pinniped_concierge_signer_expiry_timestamp_seconds{namespace="p",strategy="ImpersonationProxy"} 2593200x20`,
	},
	"PinnipedImpersonationProxySaturated": {
		firing: `pinniped_requests_rejected_total{namespace="p",queue="impersonation-proxy-reads"} 0+5x20`,
		// The Supervisor's queues are its own alert's.
		healthy: `pinniped_requests_rejected_total{namespace="p",queue="supervisor-reads"} 0+5x20`,
	},
	"PinnipedSupervisorUpstreamUnavailable": {
		firing: `pinniped_supervisor_upstream_requests_total{namespace="p",identity_provider_type="ldap",operation="password",result="unavailable"} 0+5x20
			pinniped_supervisor_upstream_requests_total{namespace="p",identity_provider_type="ldap",operation="password",result="success"} 0+5x20`,
		// Wrong passwords are the upstream answering.
		healthy: `pinniped_supervisor_upstream_requests_total{namespace="p",identity_provider_type="ldap",operation="password",result="refused"} 0+5x20
			pinniped_supervisor_upstream_requests_total{namespace="p",identity_provider_type="ldap",operation="password",result="success"} 0+5x20`,
	},
	"PinnipedSupervisorTokenExchangeErrors": {
		firing: `pinniped_supervisor_token_requests_total{namespace="p",federation_domain="fd",grant_type="token_exchange",identity_provider_type="oidc",result="invalid_grant"} 0+5x20
			pinniped_supervisor_token_requests_total{namespace="p",federation_domain="fd",grant_type="token_exchange",identity_provider_type="oidc",result="success"} 0+10x20`,
		// Ended sessions refused at refresh are not exchange errors.
		healthy: `pinniped_supervisor_token_requests_total{namespace="p",federation_domain="fd",grant_type="refresh_token",identity_provider_type="oidc",result="invalid_grant"} 0+5x20
			pinniped_supervisor_token_requests_total{namespace="p",federation_domain="fd",grant_type="token_exchange",identity_provider_type="oidc",result="success"} 0+10x20`,
	},
	"PinnipedSupervisorRequestsRejected": {
		firing:  `pinniped_requests_rejected_total{namespace="p",queue="supervisor-writes"} 0+1x20`,
		healthy: `pinniped_requests_rejected_total{namespace="p",queue="impersonation-proxy-writes"} 0+1x20`,
	},
	"PinnipedSupervisorSessionGarbageCollectionFailing": {
		firing: `pinniped_supervisor_session_garbage_collections_total{namespace="p",result="failure"} 0+2x20
			pinniped_supervisor_session_garbage_collections_total{namespace="p",result="success"} 5x20`,
		// A sweep failing now and then while others complete.
		healthy: `pinniped_supervisor_session_garbage_collections_total{namespace="p",result="failure"} 0+1x20
			pinniped_supervisor_session_garbage_collections_total{namespace="p",result="success"} 0+1x20`,
	},
	"PinnipedSupervisorSigningKeyOld": {
		firing:  `pinniped_supervisor_signing_key_generated_timestamp_seconds{namespace="p",federation_domain="fd"} -34560000x20`,
		healthy: `pinniped_supervisor_signing_key_generated_timestamp_seconds{namespace="p",federation_domain="fd"} 0x20`,
	},
}

// The rule files pass promtool's checks, every alert fires on its failure and stays quiet on a
// healthy server, says what to do in a runbook section, and uses only metrics the servers export.
func TestAlertRules(t *testing.T) {
	troubleshooting, err := os.ReadFile(docsDir + "/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	exported := exportedMetrics(t)
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 100000, Timeout: time.Minute})
	seen := map[string]bool{}
	for chart, file := range ruleFiles {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range parseRules(t, data).Groups {
			for _, r := range g.Rules {
				name := r.Alert
				seen[name] = true
				if name == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
					t.Errorf("%s: rule %q needs an alert name, a severity, a summary and a description", chart, r.Record+name)
					continue
				}
				if want := "docs/troubleshooting.md#" + strings.ToLower(name); r.Annotations["runbook_url"] != want {
					t.Errorf("%s: runbook_url %q, want %q", name, r.Annotations["runbook_url"], want)
				}
				if !strings.Contains(string(troubleshooting), "\n### "+name+"\n") {
					t.Errorf("%s: docs/troubleshooting.md has no section ### %s", name, name)
				}
				expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range selectedMetrics(expr) {
					if !exported[m] {
						t.Errorf("%s: selects %s, which no server exports (docs/reference/metrics.md)", name, m)
					}
				}
				scenario, ok := alertScenarios[name]
				if !ok {
					t.Errorf("%s: no scenario to evaluate it on", name)
					continue
				}
				if n := evaluate(t, engine, scenario.firing, r.Expr); n == 0 {
					t.Errorf("%s does not fire on its scenario", name)
				}
				if n := evaluate(t, engine, scenario.healthy, r.Expr); n != 0 {
					t.Errorf("%s fires (%d series) on a healthy server", name, n)
				}
			}
		}
	}
	for name := range alertScenarios {
		if !seen[name] {
			t.Errorf("a scenario for %s, which no rule file has", name)
		}
	}
}

// evaluate loads series and returns how many series expr gives at 20 minutes.
func evaluate(t *testing.T, engine *promql.Engine, series, expr string) int {
	t.Helper()
	q, err := engine.NewInstantQuery(context.Background(), loaded(t, series), nil, expr, time.Unix(0, 0).Add(20*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	res := q.Exec(context.Background())
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	v, err := res.Vector()
	if err != nil {
		t.Fatal(err)
	}
	return len(v)
}

// loaded serves series given in promqltest's notation, one per line, a sample a minute from 0.
func loaded(t *testing.T, series string) storage.Queryable {
	t.Helper()
	var all []promseries.Series
	for _, line := range strings.Split(strings.TrimSpace(series), "\n") {
		lbls, values, err := parser.NewParser(parser.Options{}).ParseSeriesDesc(strings.TrimSpace(line))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		s := promseries.Series{Labels: lbls}
		for i, v := range values {
			if !v.Omitted {
				s.Samples = append(s.Samples, promseries.Sample{T: int64(i) * time.Minute.Milliseconds(), V: v.Value})
			}
		}
		all = append(all, s)
	}
	return promseries.Queryable(all)
}

// selectedMetrics names the metrics expr selects, histograms by their family's name.
func selectedMetrics(expr parser.Expr) []string {
	var out []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(vs.Name, "_bucket"), "_sum"), "_count"))
		}
		return nil
	})
	return out
}

// exportedMetrics reads the metric names of the generated reference.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(docsDir + "/reference/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(pinniped_[a-z_]+)` \\|").FindAllStringSubmatch(string(data), -1) {
		out[m[1]] = true
	}
	if len(out) < 20 {
		t.Fatalf("only %d metrics in docs/reference/metrics.md", len(out))
	}
	return out
}

// The PromQL examples of the metrics how-to parse and name exported metrics.
func TestMetricsHowToQueries(t *testing.T) {
	data, err := os.ReadFile(docsDir + "/howto/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	exported := exportedMetrics(t)
	// The second column of the questions' table.
	queries := regexp.MustCompile("(?m)^\\| [^|]+ \\| `([^`]*pinniped_[^`]*)`").FindAllStringSubmatch(string(data), -1)
	if len(queries) < 5 {
		t.Fatalf("%d queries found in the how-to", len(queries))
	}
	for _, q := range queries {
		expr, err := parser.NewParser(parser.Options{}).ParseExpr(q[1])
		if err != nil {
			t.Errorf("%s: %v", q[1], err)
			continue
		}
		for _, m := range selectedMetrics(expr) {
			if !exported[m] {
				t.Errorf("%s selects %s, which no server exports", q[1], m)
			}
		}
	}
}

// The rules and the dashboard are opt-in; when asked for, the PrometheusRule holds the rule file
// with runbook links where the docs are published, and the ConfigMap the dashboard for Grafana's
// sidecar.
func TestChartRulesAndDashboard(t *testing.T) {
	for chart, file := range ruleFiles {
		t.Run(chart, func(t *testing.T) {
			for _, obj := range render(t, chart, nil) {
				if obj.GetKind() == "PrometheusRule" || strings.HasSuffix(obj.GetName(), "-dashboard") {
					t.Errorf("%s by default", KeyOf(obj))
				}
			}
			objects := render(t, chart, map[string]any{
				"prometheusRule":   map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}, "runbookBaseURL": "https://docs.example.com/v1/"},
				"grafanaDashboard": map[string]any{"enabled": true, "annotations": map[string]any{"grafana_folder": "Pinniped"}},
			})
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want := parseRules(t, data)
			var rules, dashboards int
			for _, obj := range objects {
				switch {
				case obj.GetKind() == "PrometheusRule":
					rules++
					got := decodePrometheusRule(t, obj)
					if obj.GetLabels()["release"] != "prometheus" || obj.GetNamespace() != releaseNamespace {
						t.Errorf("PrometheusRule labels %v in %q", obj.GetLabels(), obj.GetNamespace())
					}
					for i, g := range want.Groups {
						for j, r := range g.Rules {
							r.Annotations["runbook_url"] = "https://docs.example.com/v1/" + r.Annotations["runbook_url"]
							if g := got.Groups[i].Rules[j]; g.Alert != r.Alert || g.Expr != r.Expr || !maps.Equal(g.Annotations, r.Annotations) {
								t.Errorf("rendered %+v, want %+v", g, r)
							}
						}
					}
				case obj.GetKind() == "ConfigMap" && strings.HasSuffix(obj.GetName(), "-dashboard"):
					dashboards++
					board, err := os.ReadFile(chart + "/files/dashboard.json")
					if err != nil {
						t.Fatal(err)
					}
					data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
					if len(data) != 1 || !slices.Contains(slices.Collect(maps.Values(data)), string(board)) {
						t.Errorf("dashboard ConfigMap holds %d keys, not files/dashboard.json", len(data))
					}
					if obj.GetLabels()["grafana_dashboard"] != "1" || obj.GetAnnotations()["grafana_folder"] != "Pinniped" {
						t.Errorf("dashboard labels %v, annotations %v", obj.GetLabels(), obj.GetAnnotations())
					}
				}
			}
			if rules != 1 || dashboards != 1 {
				t.Errorf("%d PrometheusRules and %d dashboard ConfigMaps, want one each", rules, dashboards)
			}
		})
	}
}
