package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sealion.dev/e2e/installation"
	"sealion.dev/matrix"
	"sealion.dev/matrix/kubeversions"
)

var (
	v133 = kubeversions.Version{Minor: "1.33", Release: "v1.33.13"}
	v135 = kubeversions.Version{Minor: "1.35", Release: "v1.35.4"}
)

const cgroupReason = "the kubelet of Kubernetes 1.35 and later refuses to start on a cgroup v1 host"

// sample is a run with one of everything: a passing and a failing path, a path not built yet,
// a suite-skipped path, versions this host cannot run, a provider not built yet, a distribution
// missing its kubeconfig, and a group the budget left out.
func sample() matrix.Results {
	start := time.Date(2026, 11, 21, 17, 0, 0, 0, time.UTC)
	notBuilt := matrix.PathResult{Name: "ldap", Outcome: matrix.Outcome{Status: matrix.NotBuilt, Reason: "no e2e tests for this identity path yet"}}
	return matrix.Results{
		Started: start, Duration: 23*time.Minute + 4*time.Second, Budget: 50 * time.Minute,
		Host: "cgroup v1, containerd 1.6.20", Commit: "5d59f64", Baseline: "old/results.json",
		Groups: []matrix.GroupResult{
			{
				Distribution: "kubeadm", Version: v133, Outcome: matrix.Outcome{Status: matrix.Fail, Reason: "see the failed cells"},
				Strategy: &matrix.StrategyResult{Expected: "KubeClusterSigningCertificate", Chosen: []string{"KubeClusterSigningCertificate"},
					Outcome: matrix.Outcome{Status: matrix.Pass},
					Tests:   []matrix.TestOutcome{{Name: "TestKubeClusterSigningCertificate", Status: matrix.Pass, Elapsed: 3 * time.Second, Log: "cells/kubeadm/1.33/tests/TestKubeClusterSigningCertificate.log"}}},
				Paths: []matrix.PathResult{
					{Name: "webhook", Outcome: matrix.Outcome{Status: matrix.Pass}, Elapsed: 5 * time.Second, Change: matrix.NewPass, Tests: []matrix.TestOutcome{
						{Name: "TestCLIStaticLogin", Status: matrix.Pass, Elapsed: 5 * time.Second, Log: "cells/kubeadm/1.33/tests/TestCLIStaticLogin.log"}}},
					{Name: "dex-browser", Outcome: matrix.Outcome{Status: matrix.Fail, Reason: "TestCLIBrowserLogin: browser login as pinny@example.com: <script>stuck</script> | at consent"},
						Elapsed: 62 * time.Second, Change: matrix.Regression,
						Tests: []matrix.TestOutcome{{Name: "TestCLIBrowserLogin", Status: matrix.Fail, Elapsed: 62 * time.Second, Reason: "browser login: <script>stuck</script>"}}},
					notBuilt,
				},
				Dir: "cells/kubeadm/1.33", Started: start, Duration: 9 * time.Minute, TestTime: 70 * time.Second,
				Files: []string{"cells/kubeadm/1.33/output.log", "cells/kubeadm/1.33/e2e-logs/sealion-e2e-kubeadm/events.txt",
					"cells/kubeadm/1.33/e2e-logs/screenshots/171502.123-pinny@example.com.png"},
			},
			{
				Distribution: "gke", Simulates: "GKE", Version: v133, Outcome: matrix.Outcome{Status: matrix.Flaky, Reason: "see the flaky cells"},
				Strategy: &matrix.StrategyResult{Expected: "ImpersonationProxy", Chosen: []string{"ImpersonationProxy"}, Outcome: matrix.Outcome{Status: matrix.Pass}},
				Paths: []matrix.PathResult{
					{Name: "webhook", Outcome: matrix.Outcome{Status: matrix.Flaky, Reason: "TestCLIStaticLogin: the Concierge answered 503"}, Elapsed: 7 * time.Second,
						Tests: []matrix.TestOutcome{{Name: "TestCLIStaticLogin", Status: matrix.Flaky, Reason: "the Concierge answered 503", Elapsed: 3 * time.Second,
							Log:   "cells/gke/1.33/tests/TestCLIStaticLogin.log",
							Retry: &matrix.TestRun{Status: matrix.Pass, Elapsed: 4 * time.Second, Log: "cells/gke/1.33/rerun/tests/TestCLIStaticLogin.log"}}}},
					{Name: "dex-browser", Outcome: matrix.Outcome{Status: matrix.Skip, Reason: "TestCLIBrowserLogin: Dex runs on this machine"}},
					notBuilt,
				},
			},
			matrix.Unrun(group("kubeadm", v135), matrix.Outcome{Status: matrix.CannotRun, Reason: cgroupReason}),
			matrix.Unrun(group("gke", v135), matrix.Outcome{Status: matrix.CannotRun, Reason: cgroupReason}),
			matrix.Unrun(group("kind", v133), matrix.Outcome{Status: matrix.NotBuilt, Reason: `no "kind" provider yet (providers/all)`}),
			matrix.Unrun(group("aks", v133), matrix.Outcome{Status: matrix.NotRun, Reason: "the time budget (50m0s) ran out"}),
			matrix.Unrun(group("existing", kubeversions.Version{Minor: "cluster"}), matrix.Outcome{Status: matrix.NotRun, Reason: "KUBECONFIG is not set"}),
		},
	}
}

func group(dist string, v kubeversions.Version) matrix.Group {
	simulates := map[string]string{"gke": "GKE", "aks": "AKS"}[dist]
	return matrix.Group{Distribution: matrix.Distribution{Name: dist, Simulates: simulates}, Version: v,
		Paths: []matrix.IdentityPath{{Name: "webhook", Tests: []string{"TestCLIStaticLogin"}}, {Name: "dex-browser", Tests: []string{"TestCLIBrowserLogin"}}, {Name: "ldap"}}}
}

func TestMarkdown(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Markdown(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{
		"started 2026-11-21 17:00 UTC, commit 5d59f64, wall time 23m4s (budget 50m0s), host: cgroup v1, containerd 1.6.20.",
		"Cells: 1 pass, 1 flaky, 1 fail, 1 skip, 4 cannot run here, 4 not run, 9 not built yet.\n\n" +
			"Flaky (failed, then passed when run again; see the notes): gke/1.33/webhook.\n\n" +
			"Against baseline old/results.json: 1 regression (kubeadm/1.33/dex-browser), 0 fixed, 1 new pass, the other cells unchanged.\n",
		"| distribution | 1.33 (v1.33.13) | 1.35 (v1.35.4) | cluster |\n|---|---|---|---|\n",
		"| kubeadm | **strategy expected KubeClusterSigningCertificate, seen KubeClusterSigningCertificate: pass**<br>webhook: pass 5s **NEW PASS**" +
			"<br>dex-browser: fail 1m2s (1) **REGRESSION**<br>ldap: not built yet (2)<br>time 9m0s (tests 1m10s) | " +
			"cannot run here (3)<br>webhook: cannot run here<br>dex-browser: cannot run here<br>ldap: not built yet (2) |  |\n",
		"| gke (simulated GKE) | **strategy expected ImpersonationProxy, seen ImpersonationProxy: pass**<br>webhook: flaky 7s (4)<br>dex-browser: skip (5)<br>ldap: not built yet (2) | cannot run here (3)",
		"| kind | not built yet (6)",
		"| aks (simulated AKS) | not run (7)",
		"| existing |  |  | not run (8)",
		"1. kubeadm/1.33/dex-browser: fail: TestCLIBrowserLogin: browser login as pinny@example.com: &lt;script&gt;stuck&lt;/script&gt; \\| at consent\n",
		"2. ldap: not built yet: no e2e tests for this identity path yet\n",
		"3. kubeadm/1.35, gke/1.35: cannot run here: " + cgroupReason + "\n",
		"4. gke/1.33/webhook: flaky, failed first: TestCLIStaticLogin: the Concierge answered 503\n",
		"7. aks/1.33: not run: the time budget (50m0s) ran out\n",
		"Verdicts: pass, flaky, fail, error, skip, cannot run here, not run, not built yet",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	// Words, not symbols a font may lack: the Markdown is ASCII but for the ellipsis of
	// shortened reasons.
	for _, r := range md {
		if r > 0x7f && r != '…' {
			t.Errorf("Markdown holds %q", r)
			break
		}
	}
	// Counting cells: table rows are distributions, not groups.
	if n := strings.Count(md, "\n| "); n != 1+5 {
		t.Errorf("%d table lines, want header + 5 distributions:\n%s", n, md)
	}
}

func TestJUnit(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := JUnit(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	// 7 groups x 3 paths, plus the strategy case of the 2 that ran; 4 cases pass.
	if got.Tests != 23 || got.Failures != 1 || got.Errors != 0 || got.Skipped != 23-1-4 || len(got.Suites) != 7 {
		t.Errorf("totals tests=%d failures=%d errors=%d skipped=%d suites=%d", got.Tests, got.Failures, got.Errors, got.Skipped, len(got.Suites))
	}
	k := got.Suites[0]
	if k.Name != "kubeadm/1.33" || k.Cases[0].Name != "strategy KubeClusterSigningCertificate" || k.Cases[0].Failure != nil ||
		!strings.Contains(k.Cases[1].SystemOut, "TestCLIStaticLogin: pass (5s), log cells/kubeadm/1.33/tests/TestCLIStaticLogin.log") {
		t.Errorf("kubeadm suite %+v", k)
	}
	if f := k.Cases[2].Failure; f == nil || !strings.HasPrefix(f.Message, "regression: fail: TestCLIBrowserLogin: browser login") {
		t.Errorf("dex-browser case %+v", k.Cases[2])
	}
	if s := got.Suites[2].Cases[0].Skipped; s == nil || !strings.Contains(s.Message, "cannot run here: "+cgroupReason) {
		t.Errorf("kubeadm/1.35 webhook %+v", got.Suites[2].Cases[0])
	}
	if got.Suites[0].Properties[0] != (junitProperty{"kubernetes", "v1.33.13"}) {
		t.Errorf("properties %+v", got.Suites[0].Properties)
	}
	// Times: a suite takes the group's wall time, a case its tests' (re-runs included).
	if k.Time != 540 || k.Cases[2].Time != 62 || got.Suites[1].Cases[1].Time != 7 {
		t.Errorf("times: suite %v, dex-browser %v, gke webhook %v", k.Time, k.Cases[2].Time, got.Suites[1].Cases[1].Time)
	}
	if m := k.Cases[2].Failure.Message; !strings.HasPrefix(m, "regression: fail: ") || !strings.Contains(k.Cases[2].SystemOut, "since the baseline: regression") {
		t.Errorf("regression not shown: %q\n%s", m, k.Cases[2].SystemOut)
	}
	// A flaky case passes, its first failure kept as Surefire's flakyFailure.
	g := got.Suites[1]
	if c := g.Cases[1]; c.Failure != nil || c.Skipped != nil || c.Flaky == nil || c.Flaky.Message != "flaky: TestCLIStaticLogin: the Concierge answered 503" ||
		!strings.Contains(c.SystemOut, "; run again: pass (4s), log cells/gke/1.33/rerun/tests/TestCLIStaticLogin.log") {
		t.Errorf("gke webhook case %+v", c)
	}
	if !slices.Contains(g.Properties, junitProperty{"distribution", "gke (simulated GKE)"}) ||
		!strings.HasPrefix(g.Cases[0].SystemOut, "strategy expected ImpersonationProxy, seen ImpersonationProxy\n") {
		t.Errorf("gke suite %+v", g)
	}
	if !slices.Contains(got.Suites[6].Properties, junitProperty{"distribution", "existing"}) {
		t.Errorf("existing suite %+v", got.Suites[6].Properties)
	}
}

// A strategy other than the expected one is called a mismatch in every format.
func TestStrategyMismatchShown(t *testing.T) {
	t.Parallel()
	r := matrix.Results{Groups: []matrix.GroupResult{{
		Distribution: "eks", Simulates: "EKS", Version: v133, Outcome: matrix.Outcome{Status: matrix.Fail, Reason: "see the failed cells"},
		Strategy: &matrix.StrategyResult{Expected: "ImpersonationProxy", Chosen: []string{"KubeClusterSigningCertificate"},
			Outcome: matrix.Outcome{Status: matrix.Fail, Reason: "expected ImpersonationProxy, the CredentialIssuer reports KubeClusterSigningCertificate successful"}},
		Paths: []matrix.PathResult{{Name: "webhook", Outcome: matrix.Outcome{Status: matrix.Pass}}},
	}}}
	var md, h, j, js bytes.Buffer
	for _, f := range []struct {
		render func(io.Writer, matrix.Results) error
		buf    *bytes.Buffer
	}{{Markdown, &md}, {HTML, &h}, {JUnit, &j}, {JSON, &js}} {
		if err := f.render(f.buf, r); err != nil {
			t.Fatal(err)
		}
	}
	if want := "| eks (simulated EKS) | **strategy expected ImpersonationProxy, seen KubeClusterSigningCertificate: MISMATCH: fail (1)**"; !strings.Contains(md.String(), want) {
		t.Errorf("Markdown lacks %q:\n%s", want, md.String())
	}
	if want := `seen (reported successful) <b>KubeClusterSigningCertificate</b> <span class="mismatch">MISMATCH</span>`; !strings.Contains(h.String(), want) {
		t.Errorf("HTML lacks %q", want)
	}
	if want := `<property name="strategy.mismatch" value="true"></property>`; !strings.Contains(j.String(), want) {
		t.Errorf("JUnit lacks %q:\n%s", want, j.String())
	}
	var back matrix.Results
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || !back.Groups[0].Strategy.Mismatch() || back.Groups[0].Label() != "eks (simulated EKS)" {
		t.Errorf("JSON round trip: %v\n%s", err, js.String())
	}
}

func TestWriteAll(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := WriteAll(dir, sample()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var back matrix.Results
	if err := json.Unmarshal(raw, &back); err != nil || len(back.Groups) != 7 || back.Groups[0].Paths[1].Status != matrix.Fail {
		t.Errorf("results.json round trip: %v", err)
	}
	for _, f := range []string{MarkdownFile, HTMLFile, JUnitFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestShorten(t *testing.T) {
	t.Parallel()
	long := "first kubectl: 1.016s\nsecond kubectl: 69ms\nthe plugin: 20ms\nthe expired certificate was not replaced"
	// A failing test logs what it did, then the error: keep the end.
	if got := shorten(long, matrix.Fail); got != "… / second kubectl: 69ms / the plugin: 20ms / the expired certificate was not replaced" {
		t.Errorf("fail: %q", got)
	}
	// Anything else states its reason first.
	if got := shorten(long, matrix.Error); got != "first kubectl: 1.016s / second kubectl: 69ms / the plugin: 20ms / …" {
		t.Errorf("error: %q", got)
	}
}

// A minor run at an older patch than its newest says which patches were passed over and why.
func TestPassedOverPatches(t *testing.T) {
	t.Parallel()
	v131 := kubeversions.Version{Minor: "1.31", Release: "v1.31.0", Passed: []kubeversions.Refusal{
		{Release: "v1.31.14", Reason: "the Go module proxy does not serve k8s.io/endpointslice@v0.31.14: 403 Forbidden"}}}
	r := matrix.Results{Groups: []matrix.GroupResult{
		matrix.Unrun(group("kubeadm", v131), matrix.Outcome{Status: matrix.NotRun, Reason: "budget"}),
		matrix.Unrun(group("kubeadm", v133), matrix.Outcome{Status: matrix.NotRun, Reason: "budget"}),
	}}
	want := "1.31 runs v1.31.0; newer patches passed over: v1.31.14 (the Go module proxy does not serve k8s.io/endpointslice@v0.31.14: 403 Forbidden)"
	var md, html bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&html, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "\nKubernetes "+want+".\n") || strings.Contains(md.String(), "1.33 runs") {
		t.Errorf("Markdown lacks %q, or names 1.33:\n%s", want, md.String())
	}
	if !strings.Contains(html.String(), "<p>Kubernetes "+want+".</p>") {
		t.Errorf("HTML lacks %q:\n%s", want, html.String())
	}
}

// What an installed run found comes first, in both reports.
func TestInstallationFoundShownFirst(t *testing.T) {
	t.Parallel()
	r := sample()
	for i := range r.Groups {
		if r.Groups[i].Distribution == "existing" {
			r.Groups[i].Installation = &installation.Installation{Discovered: true, APIGroupSuffix: "auth.acme.example",
				CredentialIssuer: "pinniped-concierge-config", Strategies: []string{"KubeClusterSigningCertificate: Success (FetchedKey)"},
				Concierge: installation.Server{Namespace: "acme-concierge", Deployment: "pinniped-concierge", Image: "registry.acme.example/pinniped-server:v0.47.0", Version: "v0.47.0"}}
		}
	}
	var md, page bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&page, r); err != nil {
		t.Fatal(err)
	}
	want := "Installation tested on existing/cluster: found installed, API group suffix auth.acme.example.\n\n" +
		"- Concierge: deployment acme-concierge/pinniped-concierge, image registry.acme.example/pinniped-server:v0.47.0, version v0.47.0\n" +
		"- CredentialIssuer pinniped-concierge-config: KubeClusterSigningCertificate: Success (FetchedKey)\n" +
		"- Supervisor: none installed\n"
	if i, table := strings.Index(md.String(), want), strings.Index(md.String(), "| distribution |"); i < 0 || i > table {
		t.Errorf("Markdown lacks, before its table, %q:\n%s", want, md.String())
	}
	if i, table := strings.Index(page.String(), "<li>Concierge: deployment acme-concierge/pinniped-concierge"), strings.Index(page.String(), "<table>"); i < 0 || i > table {
		t.Errorf("HTML lacks the installation before its table:\n%s", page.String())
	}
	var ours bytes.Buffer
	if err := Markdown(&ours, sample()); err != nil || strings.Contains(ours.String(), "Installation tested") {
		t.Error("a run that installed ours names an installation found")
	}
}

// Both reports have a column per strategy, a row per cell with entries, in the Concierge's order
// of strategies; a strategy a cell did not list says so.
func TestStrategiesByCell(t *testing.T) {
	t.Parallel()
	r := sample()
	r.Groups[0].Strategy.Entries = []matrix.StrategyEntry{
		{Type: "KubeClusterSigningCertificate", Status: "Success", Reason: "FetchedKey"},
		{Type: "ImpersonationProxy", Status: "Error", Reason: "Disabled"},
		{Type: "CertificateSigningRequest", Status: "Success", Reason: "SignerAvailable"},
	}
	r.Groups[1].Strategy.Entries = []matrix.StrategyEntry{
		{Type: "ImpersonationProxy", Status: "Success", Reason: "Listening"},
		{Type: "CertificateSigningRequest", Status: "Error", Reason: "SignerNotServed"},
	}
	var md, page bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&page, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| cell | KubeClusterSigningCertificate | CertificateSigningRequest | ImpersonationProxy |\n|---|---|---|---|\n",
		"| kubeadm 1.33 | Success (FetchedKey) | Success (SignerAvailable) | Error (Disabled) |\n",
		"| gke (simulated GKE) 1.33 | not listed | Error (SignerNotServed) | Success (Listening) |\n",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(page.String(), "<th>CertificateSigningRequest</th>") || !strings.Contains(page.String(), "<td>Error (SignerNotServed)</td>") {
		t.Errorf("HTML lacks the strategies table:\n%s", page.String())
	}
	var none bytes.Buffer
	if err := Markdown(&none, sample()); err != nil || strings.Contains(none.String(), "## Strategies") {
		t.Error("a run without entries has a strategies table")
	}
}
