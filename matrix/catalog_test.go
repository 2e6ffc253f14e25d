package matrix

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sealion.dev/e2e/steps"
	"sealion.dev/providers/all"
)

func TestDefaultCatalog(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	// The simulations of clouds on this machine say so; real clusters do not.
	for name, simulates := range map[string]string{"kubeadm": "", "kind": "", "gke": "GKE", "eks": "EKS", "aks": "AKS", "talos-like": "Talos", "existing": ""} {
		d := c.Distribution(name)
		if d == nil {
			t.Errorf("distribution %s missing", name)
		} else if d.Simulates != simulates {
			t.Errorf("distribution %s simulates %q, want %q", name, d.Simulates, simulates)
		}
	}
	var built, unbuilt []string
	for _, p := range c.Paths {
		if p.Built() {
			built = append(built, p.Name)
		} else {
			unbuilt = append(unbuilt, p.Name)
		}
	}
	if !slices.Equal(built, []string{"webhook", "dex-browser", "ldap", "ad", "github", "supervisor", "device", "sessions", "kubeapps", "faults", "upgrade", "metrics"}) || len(unbuilt) != 0 {
		t.Errorf("built paths %v, not built %v", built, unbuilt)
	}
}

// TestCatalogTestsExist keeps the catalog and the suite in step: every test the catalog names is
// a top-level test of its package (go test -run would otherwise silently run nothing), and every
// test of the package is named.
func TestCatalogTestsExist(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join("..", strings.TrimPrefix(c.Package, "sealion.dev/"), "*_test.go"))
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range parsed.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				defined[fn.Name.Name] = true
			}
		}
	}
	if len(defined) == 0 {
		t.Fatalf("no tests found for %s", c.Package)
	}
	named := append(append([]string(nil), c.Suite...), c.NotInMatrix...)
	for _, p := range c.Paths {
		if p.Package == "" {
			named = append(named, p.Tests...)
		}
	}
	for _, n := range named {
		if !defined[n] {
			t.Errorf("the catalog names %s, which %s does not define", n, c.Package)
		}
	}
	// And the other way round: a new e2e test is run by the matrix or left out on purpose.
	for n := range defined {
		if n != "TestMain" && !slices.Contains(named, n) {
			t.Errorf("%s defines %s, which catalog.yaml neither runs (suite, a path's tests) nor lists in notInMatrix", c.Package, n)
		}
	}
}

// TestCatalogAgreesWithProviders checks the catalog against what each built provider says of its
// clusters: every provider has an entry, onHost matches, and the expected strategy is the one the
// Concierge picks from those capabilities.
func TestCatalogAgreesWithProviders(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range all.Names {
		d := c.Distribution(name)
		if d == nil {
			t.Errorf("provider %s has no distribution in catalog.yaml", name)
			continue
		}
		if name == "existing" {
			continue // its capabilities are whatever its user says
		}
		p, err := all.New(name, all.Options{})
		if err != nil {
			t.Fatal(err)
		}
		info := p.Info()
		if d.OnHost != info.ChangesHost {
			t.Errorf("%s: onHost %v, provider ChangesHost %v", name, d.OnHost, info.ChangesHost)
		}
		want := ""
		switch {
		case info.KubeControllerManagerPod && info.ClusterSigningKeyAvailable:
			want = "KubeClusterSigningCertificate"
		case !info.ControlPlaneVisible && info.HasExternalLoadBalancer, !info.ClusterSigningKeyAvailable && info.IngressTLSPassthrough:
			// mode auto where the control plane is hidden; or the suite enables the proxy behind an Ingress.
			want = "ImpersonationProxy"
		}
		if d.Strategy != want {
			t.Errorf("%s: catalog expects strategy %q, its capabilities say %q", name, d.Strategy, want)
		}
	}
}

func TestParseCatalogRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown field", "package: p\nsuite: []\ndistributions: [{name: a, stratgy: X}]\n", "unknown field"},
		{"twice", "package: p\npaths: [{name: a}, {name: a}]\n", `path "a" is listed twice`},
		{"pattern character", "package: p\ndistributions: [{name: 'a/b'}]\n", "character cell patterns use"},
		{"unknown strategy", "package: p\ndistributions: [{name: a, strategy: Magic}]\n", `unknown strategy "Magic"`},
		{"unknown artifact", "package: p\ndistributions: [{name: a, needs: [wand]}]\n", `unknown artifact "wand"`},
		{"strategy test outside the suite", "package: p\nstrategies: [{name: S, tests: [TestS]}]\n", "not in the suite"},
		{"no package", "paths: []\n", "package is empty"},
		{"path on an unknown distribution", "package: p\ndistributions: [{name: a}]\npaths: [{name: x, distributions: [b]}]\n", `path x: unknown distribution "b"`},
	} {
		_, err := ParseCatalog([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Where the conformance suite runs its fixtures in the cluster (steps.FixturesInCluster: clusters
// not on this machine), it pushes the Dex, LDAP and GitHub fixtures' images with the server's, so
// the distribution needs all four.
func TestOffHostDistributionsNeedFixtureImages(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"release", "dex-image", "slapd-image", "github-image"}
	for _, d := range c.Distributions {
		if !d.OnHost && slices.ContainsFunc(want, func(a string) bool { return !slices.Contains(d.Needs, a) }) {
			t.Errorf("%s runs off this machine but needs %q, want %q", d.Name, d.Needs, want)
		}
	}
}

// TestEveryDistributionInstallsTheRelease: every cluster gets the release the suites install
// (e2e/steps reads it), made at the version they read it from, as make release-check makes it.
func TestEveryDistributionInstallsTheRelease(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(c.Artifacts, func(a Artifact) bool { return a.Name == "release" })
	if i < 0 {
		t.Fatal("no release artifact")
	}
	cmd := c.Artifacts[i].Command
	if v := slices.Index(cmd, "--version"); v < 0 || v+1 == len(cmd) || cmd[v+1] != steps.ReleaseVersion {
		t.Errorf("the release artifact %q does not make version %s, which the suites install", cmd, steps.ReleaseVersion)
	}
	makefile, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(makefile), "\nDEV_RELEASE_VERSION := "+steps.ReleaseVersion+"\n") {
		t.Errorf("the Makefile's DEV_RELEASE_VERSION is not %s, which the suites install", steps.ReleaseVersion)
	}
	for _, d := range c.Distributions {
		if !slices.Contains(d.Needs, "release") {
			t.Errorf("%s needs %v, without the release its suites install", d.Name, d.Needs)
		}
	}
}
