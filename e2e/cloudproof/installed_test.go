package cloudproof

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sealion.dev/e2e/installation"
	"sealion.dev/e2e/steps"
	"sealion.dev/providers/all"
	"sealion.dev/providers/existing"
)

// A user's installation: our release's charts installed with Helm as a user installs them, each
// server in a namespace of its own choosing and the API groups under a suffix of its own.
const (
	userSuffix              = "auth.acme.example"
	userConciergeNamespace  = "acme-concierge"
	userSupervisorNamespace = "acme-supervisor"
)

// NormalResultsEnv names the results.json of a normal matrix run (make matrix-ci's) whose cell of
// a kubeadm cluster of the same Kubernetes minor the installed run's verdicts must equal.
const NormalResultsEnv = "SEALION_NORMAL_RESULTS"

// installedPaths are the identity paths an installed run has on the existing distribution, with
// the verdict each must have on a kubeadm cluster: every login passes but Active Directory's,
// whose Samba runs on the runner's host only.
var installedPaths = map[string]string{
	"webhook": "pass", "dex-browser": "pass", "ldap": "pass", "ad": "skip", "github": "pass", "supervisor": "pass",
}

// TestMatrixAgainstHelmInstallation installs our release's Concierge and Supervisor with Helm, in
// namespaces and under an API group suffix of a user's, on a kubeadm cluster treated as a
// cloud's, then runs the matrix against that installation (matrix --installed): it must find
// what was installed, put it at the top of its report, give every identity path the verdict a
// normal run gives (that run's own, when NormalResultsEnv names its results), and leave the
// installation as it was.
func TestMatrixAgainstHelmInstallation(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a kubeadm cluster on this machine, which -short excludes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()

	p, err := all.New("kubeadm", all.Options{Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := steps.TestCluster(ctx, t, p, "sealion-installed-proof")
	registry := steps.StartRegistry(ctx, t) + "/installed-proof"
	repository, digest := pushServerImage(ctx, t, registry)

	helm := buildHelm(ctx, t)
	for _, c := range []struct{ chart, namespace string }{
		{"pinniped-concierge", userConciergeNamespace}, {"pinniped-supervisor", userSupervisorNamespace},
	} {
		packages, err := filepath.Glob(filepath.Join(steps.ReleaseDir(), c.chart+"-*.tgz"))
		if err != nil || len(packages) != 1 {
			t.Fatalf("the release holds %d packages of chart %s (%v), want one", len(packages), c.chart, err)
		}
		// The image by its digest, in the tag value: the charts name an image repository:tag.
		run(ctx, t, helm, "install", c.chart, packages[0], "--kubeconfig", kubeconfig, "--namespace", c.namespace,
			"--create-namespace", "--wait", "--timeout", "5m", "--set", "apiGroupSuffix="+userSuffix,
			"--set", "image.repository="+repository, "--set", "image.tag="+steps.ReleaseVersion+"@"+digest)
	}
	before := installationState(ctx, t, kubeconfig)

	out := t.TempDir()
	cmd := exec.CommandContext(ctx, "go", "run", "./matrix/cmd/matrix", "--installed", "--out", out)
	cmd.Dir = steps.RepoPath(".")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, existing.ProfileEnv+"=kubeadm", steps.RegistryEnv+"="+registry)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	runErr := cmd.Run()
	res, err := readResults(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("the matrix wrote no readable report (%v): %v", runErr, err)
	}
	if len(res.Groups) != 1 {
		t.Fatalf("the installed run has %d groups, want existing/cluster alone", len(res.Groups))
	}
	g := res.Groups[0]

	// What was found is what Helm installed.
	inst := g.Installation
	if inst == nil || !inst.Discovered || inst.APIGroupSuffix != userSuffix || inst.Concierge.Namespace != userConciergeNamespace ||
		inst.Supervisor == nil || inst.Supervisor.Namespace != userSupervisorNamespace ||
		inst.Concierge.Image != repository+":"+steps.ReleaseVersion+"@"+digest {
		t.Errorf("the run found %+v, want what Helm installed (suffix %s, namespaces %s and %s, image %s@%s)",
			inst, userSuffix, userConciergeNamespace, userSupervisorNamespace, repository, digest)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(md), "Installation tested on existing/cluster: found installed, API group suffix "+userSuffix) {
		t.Errorf("the report does not start with the installation found (%v):\n%.2000s", err, md)
	}

	// The verdicts a normal run gives.
	want := map[string]string{}
	for path, verdict := range installedPaths {
		want[path] = verdict
	}
	strategy := "pass"
	if file := os.Getenv(NormalResultsEnv); file != "" {
		normal, err := readResults(file)
		if err != nil {
			t.Fatalf("the normal run's report: %v", err)
		}
		k := normal.group("kubeadm", minorOf(ctx, t, kubeconfig))
		if k == nil {
			t.Fatalf("the normal run of %s has no kubeadm cell of this cluster's minor", file)
		}
		strategy = k.Strategy.Status
		for _, p := range k.Paths {
			// Active Directory runs on the runner's host only: what a cluster the user brings
			// cannot reach, whoever installed the servers.
			if _, ok := want[p.Name]; ok && p.Name != "ad" {
				want[p.Name] = passedOnRetry(p.Status)
			}
		}
	}
	if g.Strategy == nil || g.Strategy.Status != strategy || !slices.Contains(g.Strategy.Chosen, "KubeClusterSigningCertificate") {
		t.Errorf("strategy %+v, want %s with KubeClusterSigningCertificate chosen, as in a normal run", g.Strategy, strategy)
	}
	for _, p := range g.Paths {
		if w, ok := want[p.Name]; !ok || passedOnRetry(p.Status) != w {
			t.Errorf("path %s: %s (%s), want %q as in a normal run", p.Name, p.Status, p.Reason, w)
		}
		delete(want, p.Name)
	}
	if len(want) > 0 {
		t.Errorf("paths %v did not run", want)
	}
	if runErr != nil {
		t.Errorf("the matrix failed: %v", runErr)
	}

	// Nothing of the installation changed, and nothing of the suite's is left.
	if after := installationState(ctx, t, kubeconfig); after != before {
		t.Errorf("the installation changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if left := leftBehind(ctx, t, kubeconfig); left != "" {
		t.Errorf("the suite left %s behind", left)
	}
}

// passedOnRetry counts a flaky verdict (failed, then passed when run again) as the pass it ended
// in: a cell is flaky in one run and not in another by chance.
func passedOnRetry(status string) string {
	if status == "flaky" {
		return "pass"
	}
	return status
}

// pushServerImage pushes the release's server image to registry and returns the repository and
// digest it is pulled by.
func pushServerImage(ctx context.Context, t *testing.T, registry string) (repository, digest string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", "run", "./images", "push", "--registry", registry, steps.ServerImageArchive())
	cmd.Dir = steps.RepoPath("tools")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pushing the server image: %v", err)
	}
	_, ref, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	repository, digest, ok := strings.Cut(ref, "@")
	if !ok {
		t.Fatalf("images push printed %q, want \"<local ref> <pushed ref>@sha256:...\"", out)
	}
	return repository, digest
}

// buildHelm builds Helm's own command, the version the tools module pins.
func buildHelm(ctx context.Context, t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "helm")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "helm.sh/helm/v3/cmd/helm")
	build.Dir = steps.RepoPath("tools")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building helm: %v\n%s", err, out)
	}
	return bin
}

func run(ctx context.Context, t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	// Helm keeps its caches and configuration under HOME's XDG folders: the test's own.
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// installationState is what a user installed, as what changes when anything of it does: each
// object Helm installed (kind, namespace, name and generation, which a change of its spec moves;
// the resourceVersion of those without a status, whose data would change), and the
// CredentialIssuer's spec.
func installationState(ctx context.Context, t *testing.T, kubeconfig string) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []struct{ kinds, version string }{
		{"deployments,services,serviceaccounts,roles,rolebindings,clusterroles,clusterrolebindings,apiservices,crds", "{.metadata.generation}"},
		{"configmaps,secrets", "{.metadata.resourceVersion}"},
	} {
		out, err := steps.Kubectl(ctx, kubeconfig, "", "get", q.kinds, "--all-namespaces", "-l", "app.kubernetes.io/managed-by=Helm",
			"-o", `jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name} `+q.version+`{"\n"}{end}`)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(out)
	}
	spec, err := steps.Kubectl(ctx, kubeconfig, "", "get", "credentialissuers", "-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.generation} {.spec}{"\n"}{end}`)
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString(spec)
	return b.String()
}

// leftBehind lists what of the suite's is still in the cluster: objects named after it in the
// installation's namespaces, and the fixtures' namespaces.
func leftBehind(ctx context.Context, t *testing.T, kubeconfig string) string {
	t.Helper()
	var left []string
	for _, ns := range []string{userConciergeNamespace, userSupervisorNamespace} {
		out, err := steps.Kubectl(ctx, kubeconfig, "", "get", "services,secrets,federationdomains", "-n", ns, "-o", "name")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range strings.Fields(out) {
			if strings.Contains(name, "sealion-e2e") {
				left = append(left, ns+"/"+name)
			}
		}
	}
	out, err := steps.Kubectl(ctx, kubeconfig, "", "get", "namespaces", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range strings.Fields(out) {
		if name == "namespace/local-user-authenticator" {
			left = append(left, name)
		}
	}
	return strings.Join(left, " ")
}

// minorOf is the cluster's Kubernetes minor, "1.37".
func minorOf(ctx context.Context, t *testing.T, kubeconfig string) string {
	t.Helper()
	out, err := steps.Kubectl(ctx, kubeconfig, "", "version", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		ServerVersion struct{ Major, Minor string } `json:"serverVersion"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	return v.ServerVersion.Major + "." + strings.TrimSuffix(v.ServerVersion.Minor, "+")
}

// results is what the proof reads of a matrix report's results.json (the suites cannot import
// the matrix's packages).
type results struct {
	Groups []groupResult `json:"groups"`
}

type groupResult struct {
	Distribution string                 `json:"distribution"`
	Version      struct{ Minor string } `json:"version"`
	Status       string                 `json:"status"`
	Strategy     *struct {
		Status string
		Chosen []string
	} `json:"strategy"`
	Paths        []struct{ Name, Status, Reason string } `json:"paths"`
	Installation *installation.Installation              `json:"installation"`
}

func (r results) group(distribution, minor string) *groupResult {
	for i, g := range r.Groups {
		if g.Distribution == distribution && g.Version.Minor == minor {
			return &r.Groups[i]
		}
	}
	return nil
}

func readResults(path string) (results, error) {
	var r results
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("reading %s: %w", path, err)
	}
	return r, nil
}
