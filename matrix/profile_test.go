package matrix

import (
	"slices"
	"strings"
	"testing"

	"sealion.dev/providers/existing"
)

// TestExistingStrategyFromProfile: the existing distribution's cells assert the strategy of the
// profile $SEALION_EXISTING_PROFILE names, and an unknown profile stops the plan, naming it.
func TestExistingStrategyFromProfile(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	for profile, want := range map[string]string{
		"eks": "ImpersonationProxy", "aks": "ImpersonationProxy", "kind": "KubeClusterSigningCertificate",
		"tkgs": "KubeClusterSigningCertificate", "generic": "", "": "",
	} {
		o := planOpts("existing/*/*", t)
		o.Getenv = func(k string) string {
			return map[string]string{existing.ProfileEnv: profile, "KUBECONFIG": "/k"}[k]
		}
		groups, err := c.Plan(o)
		if err != nil {
			t.Fatal(err)
		}
		if len(groups) != 1 || groups[0].Distribution.Strategy != want || !groups[0].Runs() {
			t.Errorf("profile %q: groups %+v, want one running group expecting %q", profile, groups, want)
		}
	}

	o := planOpts("existing/*/*", t)
	o.Getenv = func(k string) string { return map[string]string{existing.ProfileEnv: "openshift"}[k] }
	if _, err := c.Plan(o); err == nil || !strings.Contains(err.Error(), `"openshift"`) {
		t.Errorf("unknown profile: %v", err)
	}
	// The suite pushes the release's server image, which the plan makes first.
	if d := c.Distribution("existing"); !slices.Contains(d.Needs, "release") {
		t.Errorf("existing needs %v, want the release", d.Needs)
	}
	// Cells of other distributions do not read the variable.
	if _, err := c.Plan(planOpts("kubeadm/*/*", t)); err != nil {
		t.Errorf("kubeadm cells: %v", err)
	}
}

func TestStrategyFromProfileOnlyOnExisting(t *testing.T) {
	t.Parallel()
	for _, entry := range []string{
		"{name: kubeadm, strategyFromProfile: true}",
		"{name: existing, strategy: ImpersonationProxy, strategyFromProfile: true}",
	} {
		_, err := ParseCatalog([]byte("package: p\nsuite: [T]\nstrategies: [{name: ImpersonationProxy, tests: [T]}]\ndistributions: [" + entry + "]\n"))
		if err == nil || !strings.Contains(err.Error(), "strategyFromProfile is for the existing distribution") {
			t.Errorf("%s: %v", entry, err)
		}
	}
}
