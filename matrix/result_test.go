package matrix

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sealion.dev/matrix/testjson"
)

const suitePkg = "sealion.dev/e2e/conformance"

// fake describes a test as go test -json would report it.
type fake struct {
	name   string
	result testjson.Result // pass, fail, skip or running
	msg    string
	subs   []fake
}

// report replays tests into a Report the way test2json emits them.
func report(pkgResult testjson.Result, tests ...fake) *testjson.Report {
	rep := &testjson.Report{}
	add := func(e testjson.Event) { e.Package = suitePkg; rep.Add(e) }
	var run func(prefix string, f fake)
	run = func(prefix string, f fake) {
		name := prefix + f.name
		add(testjson.Event{Action: "run", Test: name})
		add(testjson.Event{Action: "output", Test: name, Output: "=== RUN   " + name + "\n"})
		for _, s := range f.subs {
			run(name+"/", s)
		}
		switch {
		case f.result == testjson.Running: // the runtime's panic, no file prefix
			add(testjson.Event{Action: "output", Test: name, Output: f.msg + "\n"})
		case f.msg != "":
			add(testjson.Event{Action: "output", Test: name, Output: "    x_test.go:10: " + f.msg + "\n"})
		}
		if f.result != testjson.Running {
			add(testjson.Event{Action: "output", Test: name, Output: fmt.Sprintf("--- %s: %s (1.00s)\n", strings.ToUpper(string(f.result)), name)})
			add(testjson.Event{Action: string(f.result), Test: name, Elapsed: 1})
		}
	}
	add(testjson.Event{Action: "start"})
	for _, f := range tests {
		run("", f)
	}
	add(testjson.Event{Action: string(pkgResult)})
	return rep
}

func pass(name string) fake { return fake{name: name, result: testjson.Pass} }

// skipInside is a test whose feature skipped: go test reports it passed.
func skipInside(name, why string) fake {
	return fake{name: name, result: testjson.Pass, subs: []fake{{name: "feature", result: testjson.Pass,
		subs: []fake{{name: "assess", result: testjson.Skip, msg: why}}}}}
}

func failInside(name, why string) fake {
	return fake{name: name, result: testjson.Fail, subs: []fake{{name: "feature", result: testjson.Fail,
		subs: []fake{{name: "assess", result: testjson.Fail, msg: why}}}}}
}

func group(t *testing.T, filter string) (Catalog, Group) {
	t.Helper()
	c := catalogWithUnbuilt(t, "ldap", "github")
	groups, err := c.Plan(planOpts(filter, t))
	if err != nil || len(groups) != 1 {
		t.Fatalf("plan %s: %v, %d groups", filter, err, len(groups))
	}
	return c, groups[0]
}

// catalogWithUnbuilt is the default catalog with the given paths' tests removed, as for identity
// paths not built yet.
func catalogWithUnbuilt(t *testing.T, paths ...string) Catalog {
	t.Helper()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Paths {
		if slices.Contains(paths, c.Paths[i].Name) {
			c.Paths[i].Tests = nil
		}
	}
	return c
}

// suite is the catalog's suite, every test passing unless given otherwise.
func suite(c Catalog, except ...fake) []fake {
	var out []fake
	for _, name := range c.Suite {
		f := pass(name)
		for _, e := range except {
			if e.name == name {
				f = e
			}
		}
		out = append(out, f)
	}
	return out
}

// kubeadmSuite is the suite as it runs on kubeadm: the test for hidden control planes skips.
func kubeadmSuite(c Catalog, except ...fake) []fake {
	return suite(c, append([]fake{skipInside("TestImpersonationProxy", "mode auto runs the proxy only where no control-plane node is visible")}, except...)...)
}

func TestAttributeAllGreen(t *testing.T) {
	t.Parallel()
	c, g := group(t, "kubeadm/1.33/{webhook,dex-browser,ldap}")
	rep := report(testjson.Pass, append(kubeadmSuite(c), pass("TestCLIStaticLogin"),
		pass("TestTokenCredentialRequestWithLocalUsers"), pass("TestCLIBrowserLogin"), pass("TestJWTAuthenticatorCEL"))...)
	r := Attribute(c, g, rep, []string{"KubeClusterSigningCertificate"})
	if r.Status != Pass || r.Strategy.Status != Pass || r.Strategy.Expected != "KubeClusterSigningCertificate" {
		t.Errorf("group %+v, strategy %+v", r.Outcome, r.Strategy.Outcome)
	}
	want := map[string]Status{"webhook": Pass, "dex-browser": Pass, "ldap": NotBuilt}
	for _, p := range r.Paths {
		if p.Status != want[p.Name] {
			t.Errorf("%s: %+v", p.Name, p.Outcome)
		}
	}
	if r.Paths[0].Tests[0].Name != "TestCLIStaticLogin" || r.Paths[0].Tests[1].Status != Pass {
		t.Errorf("webhook tests %+v", r.Paths[0].Tests)
	}
}

func TestAttributeFailuresAndSkips(t *testing.T) {
	t.Parallel()
	c, g := group(t, "gke/1.33/{webhook,dex-browser}")
	// On gke the proxy tests run and the signing-key tests skip; here the browser login fails and
	// one webhook test skips.
	rep := report(testjson.Fail, append(suite(c,
		skipInside("TestKubeClusterSigningCertificate", "this cluster runs no kube-controller-manager pod"),
		skipInside("TestImpersonationProxyDisabledWhereControlPlaneVisible", "this cluster hides its control plane"),
		skipInside("TestImpersonationProxyEnabledAtClusterIP", "mode auto already runs the proxy"),
	),
		pass("TestCLIStaticLogin"),
		skipInside("TestTokenCredentialRequestWithLocalUsers", "not here"),
		failInside("TestCLIBrowserLogin", "first kubectl: exit status 1"),
	)...)
	r := Attribute(c, g, rep, []string{"ImpersonationProxy"})
	if r.Strategy.Status != Pass {
		t.Errorf("strategy %+v", r.Strategy.Outcome)
	}
	if p := r.Paths[0]; p.Status != Pass || !strings.Contains(p.Reason, "TestTokenCredentialRequestWithLocalUsers: not here") {
		t.Errorf("webhook %+v: a pass with a skip keeps the skip's reason", p.Outcome)
	}
	if p := r.Paths[1]; p.Status != Fail || p.Reason != "TestCLIBrowserLogin: first kubectl: exit status 1" {
		t.Errorf("dex-browser %+v", p.Outcome)
	}
	if r.Status != Fail || !r.Status.Failed() {
		t.Errorf("group %+v", r.Outcome)
	}
}

func TestAttributeStrategyMismatch(t *testing.T) {
	t.Parallel()
	c, g := group(t, "kubeadm/1.33/webhook")
	withoutKey := kubeadmSuite(c, skipInside("TestKubeClusterSigningCertificate", "this cluster runs no kube-controller-manager pod"))
	rep := report(testjson.Pass, append(withoutKey, pass("TestCLIStaticLogin"), pass("TestTokenCredentialRequestWithLocalUsers"))...)
	r := Attribute(c, g, rep, nil)
	if r.Strategy.Status != Fail || !strings.Contains(r.Strategy.Reason, "expected KubeClusterSigningCertificate, but TestKubeClusterSigningCertificate skipped: this cluster runs no") {
		t.Errorf("strategy %+v", r.Strategy.Outcome)
	}
	// The tests passed but the CredentialIssuer says otherwise.
	rep = report(testjson.Pass, append(kubeadmSuite(c), pass("TestCLIStaticLogin"), pass("TestTokenCredentialRequestWithLocalUsers"))...)
	r = Attribute(c, g, rep, []string{"ImpersonationProxy"})
	if r.Strategy.Status != Fail || !strings.Contains(r.Strategy.Reason, "reports ImpersonationProxy successful") {
		t.Errorf("strategy %+v", r.Strategy.Outcome)
	}
	if r.Status != Fail || r.Paths[0].Status != Pass {
		t.Errorf("group %+v, webhook %+v", r.Outcome, r.Paths[0].Outcome)
	}
}

func TestAttributeSetupFailure(t *testing.T) {
	t.Parallel()
	c, g := group(t, "kubeadm/1.33/webhook")
	rep := report(testjson.Fail)
	// e2e-framework's klog line.
	rep.Add(testjson.Event{Package: suitePkg, Action: "output", Output: "E1121 17:44:55.663998    3189 env.go:414] Setup failure: kubectl wait: timed out\n"})
	r := Attribute(c, g, rep, nil)
	want := Outcome{Error, "the suite's setup failed: Setup failure: kubectl wait: timed out"}
	if r.Status != Error || r.Paths[0].Outcome != want || r.Strategy.Outcome != want {
		t.Errorf("group %+v, webhook %+v, strategy %+v", r.Outcome, r.Paths[0].Outcome, r.Strategy.Outcome)
	}
}

func TestAttributeMissingAndUnfinishedTests(t *testing.T) {
	t.Parallel()
	c, g := group(t, "kubeadm/1.33/{webhook,dex-browser}")
	// TestCLIBrowserLogin never started (renamed), and the binary died inside a webhook test.
	rep := report(testjson.Fail, append(kubeadmSuite(c), pass("TestCLIStaticLogin"),
		fake{name: "TestTokenCredentialRequestWithLocalUsers", result: testjson.Running, msg: "panic: test timed out after 30m0s"})...)
	r := Attribute(c, g, rep, nil)
	if p := r.Paths[0]; p.Status != Fail || !strings.Contains(p.Reason, "did not finish") || !strings.Contains(p.Reason, "timed out") {
		t.Errorf("webhook %+v", p.Outcome)
	}
	if p := r.Paths[1]; p.Status != Error || !strings.Contains(p.Reason, "has no such test") {
		t.Errorf("dex-browser %+v", p.Outcome)
	}
}

func TestUnrun(t *testing.T) {
	t.Parallel()
	_, g := group(t, "kubeadm/1.33/{webhook,github}")
	r := Unrun(g, Outcome{NotRun, "the time budget ran out"})
	if r.Status != NotRun || r.Paths[0].Status != NotRun || r.Paths[1].Status != NotBuilt || r.Status.Failed() {
		t.Errorf("%+v", r)
	}
}

func TestChosenStrategies(t *testing.T) {
	t.Parallel()
	got, err := ChosenStrategies([]byte(`apiVersion: v1
kind: List
items:
- apiVersion: config.concierge.pinniped.dev/v1alpha1
  kind: CredentialIssuer
  metadata: {name: pinniped-concierge-config}
  status:
    strategies:
    - {type: KubeClusterSigningCertificate, status: Success, reason: FetchedKey, message: ok, lastUpdateTime: "2026-11-21T17:00:00Z"}
    - {type: ImpersonationProxy, status: Error, reason: Disabled, message: off, lastUpdateTime: "2026-11-21T17:00:00Z"}
`))
	if err != nil || len(got) != 1 || got[0] != "KubeClusterSigningCertificate" {
		t.Errorf("ChosenStrategies = %v, %v", got, err)
	}
	if _, err := ChosenStrategies([]byte("items: {")); err == nil {
		t.Error("bad YAML accepted")
	}
}

// TestRetried reads recorded go test -json output of a small package: a first run where
// TestFlaky and TestBroken fail, and the re-run of those two, where TestFlaky passes.
func TestRetried(t *testing.T) {
	t.Parallel()
	c, err := ParseCatalog([]byte(`package: sample
suite: [TestSteady]
strategies: []
distributions: [{name: kubeadm}]
paths:
- {name: flaky, tests: [TestFlaky]}
- {name: broken, tests: [TestBroken, TestSteady]}
artifacts: []
`))
	if err != nil {
		t.Fatal(err)
	}
	g := Group{Distribution: *c.Distribution("kubeadm"), Paths: c.Paths}
	first := Attribute(c, g, parseRecorded(t, "retry-first.json"), nil)
	if first.Paths[0].Status != Fail || first.Paths[1].Status != Fail {
		t.Fatalf("first run %+v", first.Paths)
	}
	if got := FailedTests(first); !slices.Equal(got, []TestRef{{"sample", "TestFlaky"}, {"sample", "TestBroken"}}) {
		t.Errorf("FailedTests = %v", got)
	}

	r := Retried(c, first, parseRecorded(t, "retry-rerun.json"))
	flaky, broken := r.Paths[0], r.Paths[1]
	if flaky.Status != Flaky || flaky.Reason != "TestFlaky: login timed out waiting for the callback" || flaky.Status.Failed() {
		t.Errorf("flaky path %+v: want flaky with the first failure as reason", flaky.Outcome)
	}
	if ft := flaky.Tests[0]; ft.Status != Flaky || ft.Retry == nil || ft.Retry.Status != Pass || ft.Elapsed != 30*time.Millisecond || ft.Retry.Elapsed != 30*time.Millisecond {
		t.Errorf("TestFlaky %+v retry %+v", ft, ft.Retry)
	}
	if broken.Status != Fail || broken.Tests[0].Retry.Status != Fail || broken.Reason != "TestBroken: listing secrets: <nil>, want Forbidden" {
		t.Errorf("broken path %+v, test %+v", broken.Outcome, broken.Tests[0])
	}
	if r.Status != Fail || first.Paths[0].Status != Fail || first.Paths[0].Tests[0].Retry != nil {
		t.Errorf("group %+v; the first result must not change (%+v)", r.Outcome, first.Paths[0])
	}
	// Times: each path its tests' (re-runs included), the group all of them.
	if flaky.Elapsed != 60*time.Millisecond || broken.Elapsed != 40*time.Millisecond || r.TestTime != 120*time.Millisecond {
		t.Errorf("elapsed flaky %s, broken %s, group %s", flaky.Elapsed, broken.Elapsed, r.TestTime)
	}
	if FailedTests(r) != nil {
		t.Errorf("a test is re-run once: %v", FailedTests(r))
	}

	// With only the flaky path, the group is flaky, which does not fail the run.
	g.Paths = c.Paths[:1]
	r = Retried(c, Attribute(c, g, parseRecorded(t, "retry-first.json"), nil), parseRecorded(t, "retry-rerun.json"))
	if r.Status != Flaky || r.Status.Failed() || (Results{Groups: []GroupResult{r}}).Failed() {
		t.Errorf("group %+v", r.Outcome)
	}
}

func parseRecorded(t *testing.T, name string) *testjson.Report {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := testjson.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestStrategyFlakyAndMismatch(t *testing.T) {
	t.Parallel()
	c, g := group(t, "kubeadm/1.33/webhook")
	rep := report(testjson.Fail, append(kubeadmSuite(c, failInside("TestInstalled", "the Concierge was not ready")),
		pass("TestCLIStaticLogin"), pass("TestTokenCredentialRequestWithLocalUsers"))...)
	first := Attribute(c, g, rep, []string{"KubeClusterSigningCertificate"})
	if first.Strategy.Status != Fail || first.Strategy.Mismatch() {
		t.Fatalf("strategy %+v", first.Strategy.Outcome)
	}
	r := Retried(c, first, report(testjson.Pass, pass("TestInstalled")))
	if r.Strategy.Status != Flaky || r.Strategy.Reason != "TestInstalled: the Concierge was not ready" || r.Status != Flaky {
		t.Errorf("strategy %+v, group %+v", r.Strategy.Outcome, r.Outcome)
	}
	if !(StrategyResult{Expected: "ImpersonationProxy", Chosen: []string{"KubeClusterSigningCertificate"}}).Mismatch() ||
		(StrategyResult{Expected: "ImpersonationProxy"}).Mismatch() || (StrategyResult{Chosen: []string{"ImpersonationProxy"}}).Mismatch() {
		t.Error("Mismatch: only a known, different strategy is a mismatch")
	}
}

func TestSimulatedLabel(t *testing.T) {
	t.Parallel()
	_, gke := group(t, "gke/1.33/webhook")
	_, kubeadm := group(t, "kubeadm/1.33/webhook")
	if got := Unrun(gke, Outcome{NotRun, "x"}).Label(); got != "gke (simulated GKE)" {
		t.Errorf("gke label %q", got)
	}
	if got := Attribute(catalogWithUnbuilt(t), kubeadm, report(testjson.Pass), nil).Label(); got != "kubeadm" {
		t.Errorf("kubeadm label %q", got)
	}
}

// Each strategy's entry comes from the first list that has it: the suite's last, then the one
// saved while a test enabled a strategy auto mode does not list.
func TestStrategyEntries(t *testing.T) {
	t.Parallel()
	last := []byte(`items:
- status:
    strategies:
    - {type: KubeClusterSigningCertificate, status: Success, reason: FetchedKey}
    - {type: ImpersonationProxy, status: Error, reason: Disabled}
`)
	enabled := []byte(`items:
- status:
    strategies:
    - {type: KubeClusterSigningCertificate, status: Error, reason: Disabled}
    - {type: CertificateSigningRequest, status: Success, reason: SignerAvailable}
    - {type: ImpersonationProxy, status: Error, reason: Disabled}
`)
	got, err := StrategyEntries(last, enabled)
	want := []StrategyEntry{
		{"KubeClusterSigningCertificate", "Success", "FetchedKey"},
		{"ImpersonationProxy", "Error", "Disabled"},
		{"CertificateSigningRequest", "Success", "SignerAvailable"},
	}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("StrategyEntries = %v, %v; want %v", got, err, want)
	}
	if _, err := StrategyEntries(last, []byte("items: {")); err == nil {
		t.Error("bad YAML accepted")
	}
}
