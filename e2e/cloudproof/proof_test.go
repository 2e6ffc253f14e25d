package cloudproof

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sealion.dev/e2e/steps"
	"sealion.dev/providers/all"
	"sealion.dev/providers/existing"
)

func TestMain(m *testing.M) {
	all.Main() // first: every program linking the providers does
	flag.Parse()
	os.Exit(m.Run())
}

// suite are the conformance tests the proof runs: the install and strategy checks, the webhook
// login (its identity system, the local-user-authenticator, runs in the cluster), the dex-browser
// path (Dex runs in the cluster, fixtures/dex/incluster, reached from here through the run's
// tunnel proxy, fixtures/tunnel), the supervisor path (the Supervisor at its ClusterIP Service's
// name, tunnelled the same way, with the in-cluster Dex upstream), the ldap path (slapd runs in
// the cluster, fixtures/ldap/incluster, seeded from here through a port-forward), the github path
// (the GitHub double in the cluster, fixtures/github/incluster, behind that Supervisor), and the
// Active Directory logins, which must report that they cannot run on such a cluster.
var suite = []string{
	"TestInstalled", "TestKubeClusterSigningCertificate", "TestImpersonationProxyDisabledWhereControlPlaneVisible",
	"TestImpersonationProxyEnabledAtClusterIP", "TestImpersonationProxy", "TestImpersonationProxyAccess",
	"TestImpersonationProxyExternalTLS", "TestGetKubeconfigWithoutClusterInfo", "TestHelmChartsValidateAgainstCluster",
	"TestCLIStaticLogin", "TestTokenCredentialRequestWithLocalUsers",
	"TestCLIBrowserLogin", "TestJWTAuthenticatorCEL", "TestSupervisorDexLogin",
	"TestSupervisorLDAPLogin", "TestSupervisorGitHubLogin", "TestSupervisorActiveDirectoryLogin",
}

// mustPass are the tests that prove the kubeadm profile's strategy and the logins; a skip fails.
var mustPass = []string{
	"TestInstalled", "TestKubeClusterSigningCertificate", "TestImpersonationProxyDisabledWhereControlPlaneVisible",
	"TestHelmChartsValidateAgainstCluster",
	"TestCLIStaticLogin", "TestTokenCredentialRequestWithLocalUsers",
	"TestCLIBrowserLogin", "TestJWTAuthenticatorCEL", "TestSupervisorDexLogin", "TestSupervisorLDAPLogin",
	"TestSupervisorGitHubLogin",
}

// mustSkip are the tests of identity systems that run on this machine only, with the reason
// their skip must give.
var mustSkip = map[string]string{
	"TestSupervisorActiveDirectoryLogin": steps.ActiveDirectoryHostOnly,
}

func TestExistingClusterAsCloud(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a kubeadm cluster on this machine, which -short excludes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()

	p, err := all.New("kubeadm", all.Options{Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := steps.TestCluster(ctx, t, p, "sealion-cloud-proof")

	registry := steps.StartRegistry(ctx, t) + "/cloud-proof"
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-p=1", "-timeout=60m", "-json",
		"./e2e/conformance", "-run", runExpression(suite))
	cmd.Dir = steps.RepoPath(".")
	cmd.Env = append(os.Environ(), "SEALION_E2E_PROVIDER=existing", "KUBECONFIG="+kubeconfig,
		existing.ProfileEnv+"=kubeadm", steps.RegistryEnv+"="+registry)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	results, readErr := readVerdicts(stdout, os.Stdout)
	runErr := cmd.Wait()
	if readErr != nil {
		t.Fatalf("reading the suite's report: %v", readErr)
	}
	if err := checkVerdicts(results, suite, mustPass, mustSkip); err != nil {
		t.Errorf("%v (go test: %v)", err, runErr)
	} else if runErr != nil {
		t.Errorf("the suite failed: %v", runErr)
	}

	// The servers run the pushed image, pinned by digest, and the node never had ours loaded: the
	// images of the server, Dex, slapd and the GitHub double were pulled from the registry.
	image, err := steps.Kubectl(ctx, kubeconfig, "", "get", "deployment", "-n", "pinniped-concierge", "pinniped-concierge",
		"-o", "jsonpath={.spec.template.spec.containers[0].image}")
	if err != nil || !strings.HasPrefix(image, registry+"/pinniped-server@sha256:") {
		t.Errorf("the Concierge runs %q (%v), want %s/pinniped-server@sha256:...", image, err, registry)
	}
	// The kubelet reports a newly pulled image in the node's status at its next status update
	// (every 10 s by default), so the fixtures', pulled last, may take that long to show.
	fixtures := []string{registry + "/dex-fixture@sha256:", registry + "/slapd-fixture@sha256:", registry + "/github-fixture@sha256:"}
	pulled := func(images string) bool {
		return !slices.ContainsFunc(fixtures, func(f string) bool { return !strings.Contains(images, f) })
	}
	var nodeImages string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Second) {
		nodeImages, err = steps.Kubectl(ctx, kubeconfig, "", "get", "nodes", "-o", "jsonpath={.items[*].status.images[*].names}")
		if err == nil && pulled(nodeImages) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Errorf("reading the nodes' images: %v", err)
	}
	// The release's server image by any name (its tag, or its digest, as its YAMLs name it).
	releaseRepository, _, _ := strings.Cut(steps.ServerImage, ":")
	for _, local := range []string{releaseRepository, steps.DexImage, steps.SlapdImage, steps.GitHubImage} {
		if strings.Contains(nodeImages, local) {
			t.Errorf("node images %s: %s was loaded, not pulled", nodeImages, local)
		}
	}
	for _, f := range fixtures {
		if !strings.Contains(nodeImages, f) {
			t.Errorf("node images %s: no %s... was pulled", nodeImages, f)
		}
	}
	strategies, err := steps.Kubectl(ctx, kubeconfig, "", "get", "credentialissuers",
		"-o", `jsonpath={range .items[*].status.strategies[*]}{.type}={.status}{"\n"}{end}`)
	if err != nil || !strings.Contains(strategies, "KubeClusterSigningCertificate=Success") {
		t.Errorf("CredentialIssuer strategies %q (%v), want KubeClusterSigningCertificate=Success, the kubeadm profile's", strategies, err)
	}
}

// runExpression anchors the names for go test -run.
func runExpression(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(quoted, "|") + ")$"
}

// verdict is a top-level test's end: pass, fail or skip, and for a skip its reason.
type verdict struct{ action, skipReason string }

// readVerdicts reads `go test -json` events, echoes their output to echo, and returns each
// top-level test's verdict.
func readVerdicts(r io.Reader, echo io.Writer) (map[string]verdict, error) {
	results := map[string]verdict{}
	output := map[string]string{}
	// The suite's tests skip in subtests (the test names the feature, its subtest the reason), so
	// a test that passed with every subtest skipped and none passed was a skip.
	subPassed, subSkipped := map[string]bool{}, map[string]bool{}
	dec := json.NewDecoder(r)
	for {
		var e struct{ Action, Test, Output string }
		if err := dec.Decode(&e); err == io.EOF {
			return results, nil
		} else if err != nil {
			return results, err
		}
		io.WriteString(echo, e.Output)
		top, _, _ := strings.Cut(e.Test, "/")
		switch {
		case e.Test == "":
		case e.Action == "output":
			output[top] += e.Output
		case e.Test != top && e.Action == "pass":
			subPassed[top] = true
		case e.Test != top && e.Action == "skip":
			subSkipped[top] = true
		case e.Test == top && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			v := verdict{action: e.Action}
			if v.action == "pass" && subSkipped[top] && !subPassed[top] {
				v.action = "skip"
			}
			if v.action == "skip" {
				v.skipReason = output[top]
			}
			results[top] = v
		}
	}
}

// checkVerdicts: every test of ran ended, none failed, those of mustPass passed, and those of
// mustSkip skipped saying why.
func checkVerdicts(results map[string]verdict, ran, mustPass []string, mustSkip map[string]string) error {
	var problems []string
	for _, name := range ran {
		v, ok := results[name]
		switch {
		case !ok:
			problems = append(problems, name+" did not run")
		case v.action == "fail":
			problems = append(problems, name+" failed")
		case mustSkip[name] != "" && (v.action != "skip" || !strings.Contains(v.skipReason, mustSkip[name])):
			problems = append(problems, fmt.Sprintf("%s: %s, want a skip saying %q", name, v.action, mustSkip[name]))
		}
	}
	for _, name := range mustPass {
		if v, ok := results[name]; ok && v.action != "pass" {
			problems = append(problems, fmt.Sprintf("%s: %s, want pass: %s", name, v.action, strings.TrimSpace(v.skipReason)))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the conformance suite on the existing cluster: %s", strings.Join(problems, "; "))
	}
	return nil
}
