package conformance

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"sealion.dev/e2e/steps"
)

// releaseCharts are the release's packaged charts (<name>-<semver>.tgz), each with values that
// turn on every object it can render but a ServiceMonitor, whose CRD (the Prometheus Operator's)
// a cluster need not have.
var releaseCharts = []struct {
	name   string
	values map[string]any
}{
	{"pinniped-concierge", map[string]any{
		"networkPolicy": map[string]any{"enabled": true},
		"signer":        map[string]any{"secretName": "signer"},
		"impersonationProxy": map[string]any{"mode": "enabled", "externalEndpoint": "proxy.example.com",
			"tls": map[string]any{"secretName": "proxy-tls", "certificateAuthorityData": "Y2E="}},
	}},
	{"pinniped-supervisor", map[string]any{"networkPolicy": map[string]any{"enabled": true}}},
	{"local-user-authenticator", map[string]any{"networkPolicy": map[string]any{"enabled": true}}},
}

// TestHelmChartsValidateAgainstCluster hands what each of the release's Helm charts renders, with
// every option on, to this cluster's API server in a server-side dry run with strict validation:
// a field this Kubernetes version does not know, or one misplaced, fails here, on every version
// the matrix runs. Only a namespace of the chart's own is really created, since a dry run cannot
// create objects in a namespace that does not exist; the rest, cluster-wide objects included,
// is validated and not written.
func TestHelmChartsValidateAgainstCluster(t *testing.T) {
	f := features.New("the release's Helm charts").
		Assess("validate against the cluster's OpenAPI", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, c := range releaseCharts {
				t.Run(c.name, func(t *testing.T) {
					kubeconfig := cfg.KubeconfigFile()
					packages, err := filepath.Glob(filepath.Join(steps.ReleaseDir(), c.name+"-*.tgz"))
					if err != nil || len(packages) != 1 {
						t.Fatalf("the release holds %d packages of chart %s (%v), want one", len(packages), c.name, err)
					}
					rendered := renderChart(ctx, t, packages[0], "chartcheck-"+c.name, c.values)
					ns := "chartcheck-" + c.name
					if _, err := steps.Kubectl(ctx, kubeconfig, "", "create", "namespace", ns); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() {
						_, _ = steps.Kubectl(context.WithoutCancel(ctx), kubeconfig, "", "delete", "namespace", ns, "--wait=false")
					})
					out, err := steps.Kubectl(ctx, kubeconfig, rendered, "apply", "--dry-run=server", "--validate=strict", "-f", "-")
					if err != nil {
						t.Fatalf("the API server refused chart %s: %v", c.name, err)
					}
					if n := strings.Count(out, "(server dry run)"); n == 0 {
						t.Errorf("no object was validated: %s", out)
					}
				})
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// renderChart renders a chart package with tools/chartrender, which has Helm's library.
func renderChart(ctx context.Context, t *testing.T, chart, namespace string, values map[string]any) string {
	t.Helper()
	data, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "go", "run", "./chartrender", "--chart", chart, "--namespace", namespace, "--values", string(data))
	cmd.Dir = steps.RepoPath("tools")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("rendering %s: %v: %s", chart, err, stderr)
	}
	return string(out)
}
