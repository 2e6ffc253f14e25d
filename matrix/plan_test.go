package matrix

import (
	"slices"
	"strings"
	"testing"

	"sealion.dev/matrix/hostcheck"
	"sealion.dev/matrix/kubeversions"
)

var sixMinors = kubeversions.Newest([]string{"v1.31.14", "v1.32.13", "v1.33.13", "v1.34.4", "v1.35.4", "v1.36.3"}, 6)

func planOpts(filter string, t *testing.T) PlanOptions {
	t.Helper()
	f, err := ParseFilter(filter)
	if err != nil {
		t.Fatal(err)
	}
	return PlanOptions{
		Versions:  sixMinors,
		Filter:    f,
		Providers: []string{"kubeadm", "gke", "eks", "aks", "existing"},
		Host:      hostcheck.Host{CgroupV1: true, Containerd: "1.6.20"},
		Getenv:    func(string) string { return "" },
	}
}

func TestPlanExpandsEverything(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	groups, err := c.Plan(planOpts("", t))
	if err != nil {
		t.Fatal(err)
	}
	// Six versioned distributions x six minors, and existing once, each with six identity paths,
	// the faults and upgrade paths on kubeadm and gke only, the kubeapps path on gke, eks and
	// aks, and the device, sessions and metrics paths on kubeadm.
	if len(groups) != 6*6+1 {
		t.Fatalf("%d groups", len(groups))
	}
	cells := CellNames(groups)
	if len(cells) != 37*6+2*6+3*6+2*6+6+6+6 || cells[0] != "kubeadm/1.31/webhook" || cells[len(cells)-1] != "existing/cluster/supervisor" {
		t.Errorf("%d cells, first %s, last %s", len(cells), cells[0], cells[len(cells)-1])
	}
	for _, c := range cells {
		if strings.HasSuffix(c, "/faults") && !strings.HasPrefix(c, "kubeadm/") && !strings.HasPrefix(c, "gke/") {
			t.Errorf("cell %s: the faults path is limited to kubeadm and gke", c)
		}
		if strings.HasSuffix(c, "/upgrade") && !strings.HasPrefix(c, "kubeadm/") && !strings.HasPrefix(c, "gke/") {
			t.Errorf("cell %s: the upgrade path is limited to kubeadm and gke", c)
		}
		if (strings.HasSuffix(c, "/device") || strings.HasSuffix(c, "/sessions")) && !strings.HasPrefix(c, "kubeadm/") {
			t.Errorf("cell %s: the device and sessions paths are limited to kubeadm", c)
		}
		if strings.HasSuffix(c, "/kubeapps") && !strings.HasPrefix(c, "gke/") && !strings.HasPrefix(c, "eks/") && !strings.HasPrefix(c, "aks/") {
			t.Errorf("cell %s: the kubeapps path is limited to the managed clouds", c)
		}
	}
	blocked := map[string]Outcome{}
	for _, g := range groups {
		blocked[g.Name()] = g.Blocked
	}
	for name, want := range map[string]Status{
		"kubeadm/1.33": "", "gke/1.34": "", "kubeadm/1.35": "", "aks/1.36": "",
		"kind/1.33": NotBuilt, "existing/cluster": NotRun,
	} {
		if got := blocked[name]; got.Status != want {
			t.Errorf("%s: blocked %+v, want status %q", name, got, want)
		}
	}
	if r := blocked["existing/cluster"].Reason; !strings.Contains(r, "KUBECONFIG") {
		t.Errorf("existing reason %q", r)
	}
}

func TestPlanFilters(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		filter string
		want   []string
	}{
		{"kubeadm/1.33/webhook", []string{"kubeadm/1.33/webhook"}},
		{"kubeadm/v1.33.13/webhook", []string{"kubeadm/1.33/webhook"}},
		{"gke/1.3[45]/dex-*", []string{"gke/1.34/dex-browser", "gke/1.35/dex-browser"}},
		{"{kubeadm,gke}/1.33/{webhook,ldap}", []string{"kubeadm/1.33/webhook", "kubeadm/1.33/ldap", "gke/1.33/webhook", "gke/1.33/ldap"}},
		{"aks/1.36, eks/1.31/webhook", []string{"eks/1.31/webhook", "aks/1.36/webhook", "aks/1.36/dex-browser",
			"aks/1.36/ldap", "aks/1.36/ad", "aks/1.36/github", "aks/1.36/supervisor", "aks/1.36/kubeapps"}},
		{"existing", []string{"existing/cluster/webhook", "existing/cluster/dex-browser", "existing/cluster/ldap",
			"existing/cluster/ad", "existing/cluster/github", "existing/cluster/supervisor"}},
		// Exclusions take cells away from what the others select, in any order.
		{"-gke/*/faults {kubeadm,gke}/1.33/{webhook,faults} -kubeadm/1.33/webhook", []string{"kubeadm/1.33/faults", "gke/1.33/webhook"}},
		// Alone, from every cell.
		{"-*/*/{webhook,dex-browser,ldap,ad,github,supervisor,device,sessions,kubeapps,faults,metrics} -{kubeadm,eks,aks,kind,talos-like}",
			[]string{"gke/1.31/upgrade", "gke/1.32/upgrade", "gke/1.33/upgrade", "gke/1.34/upgrade", "gke/1.35/upgrade", "gke/1.36/upgrade"}},
	} {
		groups, err := c.Plan(planOpts(tc.filter, t))
		if err != nil {
			t.Errorf("%s: %v", tc.filter, err)
			continue
		}
		if got := CellNames(groups); !slices.Equal(got, tc.want) {
			t.Errorf("%s: cells %v, want %v", tc.filter, got, tc.want)
		}
	}
}

func TestPlanRejectsPatternsThatSelectNothing(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Plan(planOpts("kubeadm/1.33/webhook,kubeadmm/1.33", t))
	if err == nil || !strings.Contains(err.Error(), `"kubeadmm/1.33" selects no cell`) || !strings.Contains(err.Error(), "versions: 1.31 1.32") {
		t.Errorf("err = %v", err)
	}
	// An exclusion that matches no cell is a mistake too.
	_, err = c.Plan(planOpts("kubeadm/1.33 -kubeadm/1.33/fault", t))
	if err == nil || !strings.Contains(err.Error(), `"-kubeadm/1.33/fault" selects no cell`) {
		t.Errorf("err = %v", err)
	}
	for _, bad := range []string{"a/b/c/d", "kubeadm/{1.33", "kubeadm/1.33}", "[/1.33", "-a/b/c/d"} {
		if _, err := ParseFilter(bad); err == nil {
			t.Errorf("ParseFilter(%q) accepted", bad)
		}
	}
}

func TestGroupRuns(t *testing.T) {
	t.Parallel()
	c := catalogWithUnbuilt(t, "ldap", "ad")
	o := planOpts("kubeadm/1.33/{ldap,ad},kubeadm/1.34,kubeadm/1.38/webhook", t)
	// containerd 1.6 cannot run 1.38's kubelet (hostcheck.Rules).
	o.Versions = kubeversions.Newest([]string{"v1.33.13", "v1.34.4", "v1.38.0"}, 3)
	groups, err := c.Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]bool{}
	for _, g := range groups {
		runs[g.Name()] = g.Runs()
	}
	// Only unbuilt paths: no cluster. A blocked version: no cluster.
	if runs["kubeadm/1.33"] || !runs["kubeadm/1.34"] || runs["kubeadm/1.38"] {
		t.Errorf("runs %v", runs)
	}
	o.SkipHostChecks = true
	groups, _ = c.Plan(o)
	if !groups[2].Runs() {
		t.Errorf("--skip-host-checks should run %s", groups[2].Name())
	}
}

func TestGoTest(t *testing.T) {
	t.Parallel()
	c := catalogWithUnbuilt(t, "ldap")
	groups, err := c.Plan(planOpts("kubeadm/1.33/{webhook,ldap}", t))
	if err != nil {
		t.Fatal(err)
	}
	pkgs, run := groups[0].GoTest(c)
	if !slices.Equal(pkgs, []string{"sealion.dev/e2e/conformance"}) {
		t.Errorf("packages %v", pkgs)
	}
	// The suite, then the webhook path's tests; not the browser test, and nothing for ldap.
	if want := "^(" + strings.Join(c.Suite, "|") + "|TestCLIStaticLogin|TestTokenCredentialRequestWithLocalUsers)$"; run != want {
		t.Errorf("-run %s, want %s", run, want)
	}
}

func TestPlanVersionsTheProxyCannotServe(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	opts := planOpts("{kubeadm,existing}/*/webhook", t)
	opts.Versions = slices.Clone(opts.Versions)
	opts.Versions[0].Unserved = "the Go module proxy serves no patch of Kubernetes 1.31 in full (v1.31.14: ...)"
	groups, err := c.Plan(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		unserved := g.Version.Minor == "1.31"
		if got := g.Blocked; unserved != (got.Status == CannotRun && got.Reason == opts.Versions[0].Unserved) {
			t.Errorf("%s: blocked %+v", g.Name(), got)
		}
	}
}

func TestSelects(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	for filter, want := range map[string][]string{
		"":                        {"1.31", "1.32", "1.33", "1.34", "1.35", "1.36"},
		"kubeadm/1.33/*":          {"1.33"},
		"*/v1.35.4/webhook":       {"1.35"},
		"{kind,gke}/1.3[12]/ldap": {"1.31", "1.32"},
		"existing":                nil,
	} {
		f, err := ParseFilter(filter)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range sixMinors {
			if c.Selects(f, v) {
				got = append(got, v.Minor)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q selects %v, want %v", filter, got, want)
		}
	}
}

func TestFilterWithMinors(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	opts := planOpts("kubeadm/newest/webhook, gke/{1.33,newest}/ldap, eks/oldest/webhook", t)
	original := opts.Filter
	opts.Filter = opts.Filter.WithMinors("1.36", "1.32")
	groups, err := c.Plan(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := CellNames(groups), []string{"kubeadm/1.36/webhook", "gke/1.33/ldap", "gke/1.36/ldap", "eks/1.32/webhook"}; !slices.Equal(got, want) {
		t.Errorf("cells %v, want %v", got, want)
	}
	// The filter it was made from is unchanged.
	if _, err := c.Plan(planOpts("kubeadm/newest/webhook", t)); err == nil || original[0].parts[1][0] != NewestMinor {
		t.Errorf("without WithMinors 'newest' should select nothing (%v) and the original stay as it was (%v)", err, original[0].parts[1])
	}
}

// An installed run tests what a user installed on the cluster of KUBECONFIG: the existing
// distribution's cells only, and a pattern for another distribution is refused, not ignored.
func TestPlanInstalled(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	o := planOpts("", t)
	o.Installed = true
	groups, err := c.Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || groups[0].Name() != "existing/cluster" {
		t.Fatalf("groups %v, want existing/cluster alone", CellNames(groups))
	}
	o = planOpts("kubeadm/1.33/webhook", t)
	o.Installed = true
	if _, err := c.Plan(o); err == nil || !strings.Contains(err.Error(), "an installed run tests the existing distribution only") {
		t.Errorf("err = %v", err)
	}
}
