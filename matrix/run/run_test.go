package run

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sealion.dev/matrix"
	"sealion.dev/matrix/hostcheck"
	"sealion.dev/matrix/kubeversions"
)

// fakeClock advances only when told, and is safe for the progress ticker.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }
func newClock() *fakeClock               { return &fakeClock{t: time.Date(2026, 11, 21, 17, 0, 0, 0, time.UTC)} }
func versions(minors ...string) []kubeversions.Version {
	var out []kubeversions.Version
	for _, m := range minors {
		out = append(out, kubeversions.Version{Minor: m, Release: "v" + m + ".1"})
	}
	return out
}

func plan(t *testing.T, cat matrix.Catalog, filter string, vs []kubeversions.Version) []matrix.Group {
	t.Helper()
	f, err := matrix.ParseFilter(filter)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := cat.Plan(matrix.PlanOptions{Versions: vs, Filter: f, Providers: []string{"kubeadm", "gke"},
		Host: hostcheck.Host{CgroupV1: true, Containerd: "1.6.20"}, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return groups
}

func TestBudget(t *testing.T) {
	t.Parallel()
	cat, err := matrix.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	// kubeadm 1.31-1.34 and 1.38, gke 1.31: 1.38 cannot run here (containerd 1.6); each group takes 20 minutes.
	groups := plan(t, cat, "kubeadm/*/webhook,gke/1.31/webhook", versions("1.31", "1.32", "1.33", "1.34", "1.38"))
	clock := newClock()
	var ran []string
	var progressOut bytes.Buffer
	r := &Runner{Catalog: cat, Budget: 50 * time.Minute, Now: clock.now, Progress: &progressOut,
		runGroup: func(_ context.Context, g matrix.Group, _ *progress) matrix.GroupResult {
			ran = append(ran, g.Name())
			clock.add(20 * time.Minute)
			return matrix.GroupResult{Distribution: g.Distribution.Name, Version: g.Version, Outcome: matrix.Outcome{Status: matrix.Pass},
				Paths: []matrix.PathResult{{Name: "webhook", Outcome: matrix.Outcome{Status: matrix.Pass}}}, Duration: 20 * time.Minute}
		}}
	res := r.Run(context.Background(), groups, nil)

	// Started at 0, 20 and 40 minutes; at 60 the budget is spent.
	if !slices.Equal(ran, []string{"kubeadm/1.31", "kubeadm/1.32", "kubeadm/1.33"}) {
		t.Errorf("ran %v", ran)
	}
	got := map[string]matrix.Outcome{}
	for _, g := range res.Groups {
		got[g.Name()] = g.Outcome
	}
	for name, want := range map[string]matrix.Status{
		"kubeadm/1.33": matrix.Pass, "kubeadm/1.34": matrix.NotRun, "kubeadm/1.38": matrix.CannotRun, "gke/1.31": matrix.NotRun,
	} {
		if got[name].Status != want {
			t.Errorf("%s: %+v, want %s", name, got[name], want)
		}
	}
	if r := got["gke/1.31"].Reason; r != "the time budget (50m0s) ran out before it started" {
		t.Errorf("budget reason %q", r)
	}
	if res.Duration != time.Hour || res.Failed() {
		t.Errorf("duration %s, failed %v", res.Duration, res.Failed())
	}
	out := progressOut.String()
	if strings.Contains(out, "\x1b") {
		t.Error("colour without Color")
	}
	for _, want := range []string{
		"matrix 0:00:00 | 6 cells in 6 groups (one cluster each)",
		"matrix 0:00:00 | cells: 0 done, 1 running, 5 left (kubeadm/1.31: building and setting up) | elapsed 0:00:00, budget left 0:50:00",
		"matrix 0:20:00 | kubeadm/1.31: pass, webhook pass in 20m0s",
		"matrix 0:40:00 | cells: 2 done, 1 running, 3 left (kubeadm/1.33: building and setting up) | elapsed 0:40:00, budget left 0:10:00",
		"matrix 1:00:00 | kubeadm/1.34: not run, webhook not run: the time budget (50m0s) ran out before it started",
		"matrix 1:00:00 | kubeadm/1.38: cannot run here, webhook cannot run here: the kubelet of Kubernetes 1.38",
		"matrix 1:00:00 | cells: 6 done, 0 running, 0 left | elapsed 1:00:00, budget left 0:00:00",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
}

// Verdicts are coloured when the runner is told to (a terminal, NO_COLOR unset).
func TestProgressColour(t *testing.T) {
	t.Parallel()
	cat, err := matrix.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r := &Runner{Catalog: cat, Progress: &out, Color: true, runGroup: func(_ context.Context, g matrix.Group, _ *progress) matrix.GroupResult {
		return matrix.GroupResult{Distribution: g.Distribution.Name, Version: g.Version, Outcome: matrix.Outcome{Status: matrix.Flaky},
			Strategy: &matrix.StrategyResult{Expected: "ImpersonationProxy", Chosen: []string{"KubeClusterSigningCertificate"}, Outcome: matrix.Outcome{Status: matrix.Fail}},
			Paths:    []matrix.PathResult{{Name: "webhook", Outcome: matrix.Outcome{Status: matrix.Flaky}}}}
	}}
	r.Run(context.Background(), plan(t, cat, "kubeadm/1.33/webhook", versions("1.33")), nil)
	want := "kubeadm/1.33: \x1b[1;33mflaky\x1b[0m, webhook \x1b[1;33mflaky\x1b[0m, strategy \x1b[1;31mfail\x1b[0m " +
		"(expected ImpersonationProxy, seen KubeClusterSigningCertificate) in 0s"
	if !strings.Contains(out.String(), want) {
		t.Errorf("progress lacks %q:\n%s", want, out.String())
	}
}

func TestInterrupt(t *testing.T) {
	t.Parallel()
	cat, err := matrix.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	groups := plan(t, cat, "kubeadm/*/webhook", versions("1.31", "1.32"))
	stop := make(chan struct{})
	r := &Runner{Catalog: cat, runGroup: func(_ context.Context, g matrix.Group, _ *progress) matrix.GroupResult {
		close(stop) // the interrupt arrives while the first group runs
		return matrix.GroupResult{Distribution: g.Distribution.Name, Version: g.Version, Outcome: matrix.Outcome{Status: matrix.Fail}}
	}}
	res := r.Run(context.Background(), groups, stop)
	if res.Groups[0].Status != matrix.Fail || res.Groups[1].Status != matrix.NotRun ||
		!strings.Contains(res.Groups[1].Reason, "interrupted") || !res.Failed() {
		t.Errorf("groups %+v", res.Groups)
	}
}

const testCatalog = `package: sealion.dev/e2e/conformance
suite: [TestInstalled, TestKubeClusterSigningCertificate]
strategies: [{name: KubeClusterSigningCertificate, tests: [TestKubeClusterSigningCertificate]}]
distributions:
- {name: kubeadm, strategy: KubeClusterSigningCertificate, needs: [binaries, engine]}
- {name: gke, needs: [binaries]}
paths:
- {name: webhook, tests: [TestCLIStaticLogin]}
- {name: ldap}
artifacts:
- {name: binaries, dir: ., command: [sh, -c, 'echo "build {{.Release}}" >> builds.txt']}
- {name: engine, dir: ., command: [sh, -c, 'echo start >> builds.txt'], cleanup: [sh, -c, 'echo stop >> builds.txt']}
`

// events is go test -json output of the test catalog's suite, TestCLIStaticLogin ending as given.
func events(staticLogin string) string {
	var b strings.Builder
	line := func(action, test, output string) {
		fmt.Fprintf(&b, `{"Action":%q,"Package":"sealion.dev/e2e/conformance","Test":%q,"Output":%q,"Elapsed":1.5}`+"\n", action, test, output)
	}
	for _, t := range []struct{ name, result string }{{"TestInstalled", "pass"}, {"TestKubeClusterSigningCertificate", "pass"}, {"TestCLIStaticLogin", staticLogin}} {
		line("run", t.name, "")
		line("output", t.name, "=== RUN   "+t.name+"\n")
		if t.result == "fail" {
			line("output", t.name, "    cli_test.go:40: listing secrets: <nil>, want Forbidden\n")
		}
		line("output", t.name, "--- "+strings.ToUpper(t.result)+": "+t.name+" (1.50s)\n")
		line(t.result, t.name, "")
	}
	return b.String()
}

// TestExecute runs two groups through a fake go command that replays go test -json output and
// writes what the real suite writes into SEALION_E2E_LOGS.
func TestExecute(t *testing.T) {
	// Not parallel: it writes a program and runs it, and a fork by a parallel test can hold the
	// file open for writing meanwhile ("text file busy", golang/go#22315).
	cat, err := matrix.ParseCatalog([]byte(testCatalog))
	if err != nil {
		t.Fatal(err)
	}
	repo, out := t.TempDir(), t.TempDir()
	write := func(name, content string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("kubeadm.json", events("fail"), 0o644)
	write("gke.json", events("pass"), 0o644)
	// The re-run of kubeadm's failed test: it passes now.
	var rerun []string
	for _, l := range strings.SplitAfter(events("pass"), "\n") {
		if strings.Contains(l, `"Test":"TestCLIStaticLogin"`) {
			rerun = append(rerun, l)
		}
	}
	write("kubeadm-rerun.json", strings.Join(rerun, ""), 0o644)
	write("fake-go", `#!/bin/sh
echo "$SEALION_E2E_PROVIDER $SEALION_E2E_KUBE_VERSION $SEALION_KUBE_BIN_DIR $SEALION_ALLOW_HOST_CHANGES $*" >> args.txt
echo "go: downloading example.com/x v1.0.0" >&2
case "$SEALION_E2E_LOGS" in
*/rerun/e2e-logs) cat "$SEALION_E2E_PROVIDER-rerun.json"; exit 0 ;;
esac
cat "$SEALION_E2E_PROVIDER.json"
mkdir -p "$SEALION_E2E_LOGS/sealion-e2e-$SEALION_E2E_PROVIDER" "$SEALION_E2E_LOGS/screenshots"
echo "LAST-SEEN NAMESPACE OBJECT" > "$SEALION_E2E_LOGS/sealion-e2e-$SEALION_E2E_PROVIDER/events.txt"
if [ "$SEALION_E2E_PROVIDER" = kubeadm ]; then
	printf 'items:\n- status:\n    strategies:\n    - {type: KubeClusterSigningCertificate, status: Success}\n' > "$SEALION_E2E_LOGS/sealion-e2e-kubeadm/credentialissuers.yaml"
	echo png > "$SEALION_E2E_LOGS/screenshots/1-pinny.png"
	exit 1
fi
`, 0o755)

	groups := plan(t, cat, "kubeadm/1.33,gke/1.33/webhook", versions("1.33"))
	var progressOut bytes.Buffer
	r := &Runner{Catalog: cat, Repo: repo, Out: out, Cache: "/cache", GoCommand: filepath.Join(repo, "fake-go"),
		AllowHostChanges: true, Progress: &progressOut}
	res := r.Run(context.Background(), groups, nil)
	if len(res.Groups) != 2 {
		t.Fatalf("%d groups", len(res.Groups))
	}

	builds, _ := os.ReadFile(filepath.Join(repo, "builds.txt"))
	if string(builds) != "build v1.33.1\nstart\nstop\n" {
		t.Errorf("artifacts: each command once, the cleanup at the end; got\n%s", builds)
	}
	args, _ := os.ReadFile(filepath.Join(repo, "args.txt"))
	// kubeadm's run, the re-run of its failed test, gke's run.
	if !strings.HasPrefix(string(args), "kubeadm v1.33.1 /cache/kubernetes/v1.33.1/bin true test -json -count=1 -p=1 -timeout=1h0m0s "+
		"sealion.dev/e2e/conformance -run ^(TestInstalled|TestKubeClusterSigningCertificate|TestCLIStaticLogin)$\n"+
		"kubeadm v1.33.1 /cache/kubernetes/v1.33.1/bin true test -json -count=1 -p=1 -timeout=1h0m0s "+
		"sealion.dev/e2e/conformance -run ^(TestCLIStaticLogin)$\ngke ") {
		t.Errorf("go test invocations:\n%s", args)
	}

	// kubeadm's webhook test failed, then passed when run again: flaky, which fails nothing.
	k := res.Groups[0]
	if k.Status != matrix.Flaky || res.Failed() || k.Strategy.Status != matrix.Pass || !slices.Equal(k.Strategy.Chosen, []string{"KubeClusterSigningCertificate"}) {
		t.Errorf("kubeadm %+v, strategy %+v", k.Outcome, k.Strategy)
	}
	if p := k.Paths[0]; p.Status != matrix.Flaky || p.Reason != "TestCLIStaticLogin: listing secrets: <nil>, want Forbidden" ||
		p.Tests[0].Log != "cells/kubeadm/1.33/tests/TestCLIStaticLogin.log" || p.Tests[0].Retry == nil ||
		p.Tests[0].Retry.Log != "cells/kubeadm/1.33/rerun/tests/TestCLIStaticLogin.log" || p.Elapsed != 3*time.Second {
		t.Errorf("webhook %+v", p)
	}
	if k.TestTime != 6*time.Second {
		t.Errorf("kubeadm test time %s", k.TestTime)
	}
	if p := k.Paths[1]; p.Status != matrix.NotBuilt {
		t.Errorf("ldap %+v", p)
	}
	for _, f := range []string{"cells/kubeadm/1.33/go-test.json", "cells/kubeadm/1.33/output.log", "cells/kubeadm/1.33/tests/TestCLIStaticLogin.log",
		"cells/kubeadm/1.33/e2e-logs/sealion-e2e-kubeadm/events.txt", "cells/kubeadm/1.33/e2e-logs/screenshots/1-pinny.png",
		"cells/kubeadm/1.33/rerun/go-test.json", "cells/kubeadm/1.33/rerun/output.log", "cells/kubeadm/1.33/rerun/tests/TestCLIStaticLogin.log"} {
		if !slices.Contains(k.Files, f) {
			t.Errorf("files %v lack %s", k.Files, f)
		}
	}
	log, _ := os.ReadFile(filepath.Join(out, "cells/kubeadm/1.33/tests/TestCLIStaticLogin.log"))
	if !strings.Contains(string(log), "want Forbidden") || strings.Contains(string(log), "TestInstalled") {
		t.Errorf("test log:\n%s", log)
	}
	text, _ := os.ReadFile(filepath.Join(out, "cells/kubeadm/1.33/output.log"))
	if !strings.Contains(string(text), "go: downloading example.com/x") || !strings.Contains(string(text), "--- FAIL: TestCLIStaticLogin") {
		t.Errorf("output.log:\n%s", text)
	}

	// gke passes; no CredentialIssuer file means the strategy is not known, and none is expected.
	g := res.Groups[1]
	if g.Status != matrix.Pass || g.Strategy.Chosen != nil || len(g.Paths) != 1 {
		t.Errorf("gke %+v", g)
	}
	if !strings.Contains(progressOut.String(), "kubeadm/1.33: TestCLIStaticLogin fail (1.5s)") ||
		!strings.Contains(progressOut.String(), "kubeadm/1.33: running the failed TestCLIStaticLogin once more (logs in cells/kubeadm/1.33/rerun)") {
		t.Errorf("progress:\n%s", progressOut.String())
	}
}

// TestExecuteInstalled runs an installed run's group: the suite is told so, and the installation
// it saved is the group's.
func TestExecuteInstalled(t *testing.T) {
	// Not parallel, as TestExecute.
	cat, err := matrix.ParseCatalog([]byte(testCatalog))
	if err != nil {
		t.Fatal(err)
	}
	repo, out := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "gke.json"), []byte(events("pass")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "fake-go"), []byte(`#!/bin/sh
echo "$SEALION_E2E_INSTALLED" > installed.txt
cat "$SEALION_E2E_PROVIDER.json"
mkdir -p "$SEALION_E2E_LOGS/sealion-e2e-gke"
echo '{"discovered": true, "apiGroupSuffix": "auth.acme.example", "concierge": {"namespace": "acme", "deployment": "pinniped-concierge"}}' \
	> "$SEALION_E2E_LOGS/sealion-e2e-gke/installation.json"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Catalog: cat, Repo: repo, Out: out, Cache: "/cache", GoCommand: filepath.Join(repo, "fake-go"), Installed: true}
	res := r.Run(context.Background(), plan(t, cat, "gke/1.33/webhook", versions("1.33")), nil)
	if told, _ := os.ReadFile(filepath.Join(repo, "installed.txt")); string(told) != "true\n" {
		t.Errorf("the suite was told SEALION_E2E_INSTALLED=%q", told)
	}
	g := res.Groups[0]
	if g.Status != matrix.Pass || g.Installation == nil || g.Installation.APIGroupSuffix != "auth.acme.example" ||
		g.Installation.Concierge.Namespace != "acme" {
		t.Errorf("group %+v, installation %+v", g.Outcome, g.Installation)
	}
}

func TestBuildFailureIsAnError(t *testing.T) {
	// Not parallel: it writes a program and runs it, and a fork by a parallel test can hold the
	// file open for writing meanwhile ("text file busy", golang/go#22315).
	cat, err := matrix.ParseCatalog([]byte(strings.Replace(testCatalog, `'echo "build {{.Release}}" >> builds.txt'`, `'echo no compiler for {{.Release}}; exit 3'`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	repo, out := t.TempDir(), t.TempDir()
	groups := plan(t, cat, "kubeadm/1.33,gke/1.33", versions("1.33"))
	r := &Runner{Catalog: cat, Repo: repo, Out: out, Cache: "/cache", GoCommand: "/nonexistent/go"}
	res := r.Run(context.Background(), groups, nil)
	for _, g := range res.Groups {
		if g.Status != matrix.Error || !strings.Contains(g.Reason, "building binaries failed: exit status 3: no compiler for v1.33.1 (log: prepare/binaries-v1.33.1.log)") {
			t.Errorf("%s: %+v", g.Name(), g.Outcome)
		}
		if g.Paths[0].Status != matrix.Error || g.Paths[1].Status != matrix.NotBuilt {
			t.Errorf("%s paths %+v", g.Name(), g.Paths)
		}
	}
}

func TestBuildThatCannotBeMadeHere(t *testing.T) {
	// Not parallel, as TestBuildFailureIsAnError.
	cat, err := matrix.ParseCatalog([]byte(strings.Replace(testCatalog,
		`command: [sh, -c, 'echo "build {{.Release}}" >> builds.txt']`,
		`command: [sh, -c, 'echo resolving; echo "{{.Release}} needs a module the proxy does not serve"; exit 3'], cannotRunExit: 3`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	repo, out := t.TempDir(), t.TempDir()
	groups := plan(t, cat, "kubeadm/1.33", versions("1.33"))
	r := &Runner{Catalog: cat, Repo: repo, Out: out, Cache: "/cache", GoCommand: "/nonexistent/go"}
	res := r.Run(context.Background(), groups, nil)
	g := res.Groups[0]
	if g.Status != matrix.CannotRun || g.Reason != "v1.33.1 needs a module the proxy does not serve (log: prepare/binaries-v1.33.1.log)" || g.Status.Failed() {
		t.Errorf("%s: %+v", g.Name(), g.Outcome)
	}
}

// The strategies chosen come from the suite's last CredentialIssuers only; the entries from it
// first, then from those saved while a test enabled the CertificateSigningRequest strategy.
func TestSavedStrategies(t *testing.T) {
	logs := t.TempDir()
	cluster := filepath.Join(logs, "sealion-e2e-kubeadm")
	if err := os.MkdirAll(cluster, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, strategies string) {
		if err := os.WriteFile(filepath.Join(cluster, name), []byte("items:\n- status:\n    strategies:\n"+strategies), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if chosen, entries, err := savedStrategies(logs); chosen != nil || entries != nil || err != nil {
		t.Errorf("nothing saved: %v, %v, %v", chosen, entries, err)
	}
	write(matrix.CredentialIssuersCSREnabledFile, "    - {type: KubeClusterSigningCertificate, status: Error, reason: Disabled}\n"+
		"    - {type: CertificateSigningRequest, status: Success, reason: SignerAvailable}\n")
	write(matrix.CredentialIssuersFile, "    - {type: KubeClusterSigningCertificate, status: Success, reason: FetchedKey}\n")
	chosen, entries, err := savedStrategies(logs)
	if err != nil || !slices.Equal(chosen, []string{"KubeClusterSigningCertificate"}) || !slices.Equal(entries, []matrix.StrategyEntry{
		{Type: "KubeClusterSigningCertificate", Status: "Success", Reason: "FetchedKey"},
		{Type: "CertificateSigningRequest", Status: "Success", Reason: "SignerAvailable"},
	}) {
		t.Errorf("savedStrategies = %v, %v, %v", chosen, entries, err)
	}
}
