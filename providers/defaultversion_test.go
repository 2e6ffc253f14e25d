package providers_test

import (
	"os"
	"regexp"
	"testing"

	"sealion.dev/providers"
)

// The Makefile builds and runs KUBE_VERSION by default, the providers and tools run
// DefaultKubernetesVersion: one default, or `make demo` would build one Kubernetes and start
// another.
func TestMakefileDefaultsToTheProvidersVersion(t *testing.T) {
	t.Parallel()
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^KUBE_VERSION \?= (\S+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no KUBE_VERSION default")
	}
	if string(m[1]) != providers.DefaultKubernetesVersion {
		t.Errorf("the Makefile's KUBE_VERSION defaults to %s, providers.DefaultKubernetesVersion is %s", m[1], providers.DefaultKubernetesVersion)
	}
}
