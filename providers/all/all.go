// Package all maps provider names to providers. It is the one place that imports every backend,
// so the e2e suites and the matrix runner choose a provider by name and nothing else does. Every
// program that links it calls Main first thing in main (test packages in TestMain).
package all

import (
	"fmt"
	"io"
	"strings"

	"sealion.dev/providers"
	"sealion.dev/providers/existing"
	"sealion.dev/providers/kind"
	"sealion.dev/providers/kubeadm"
	"sealion.dev/providers/managed"
)

// Names are the providers New knows, in the order the matrix lists them.
var Names = []string{"kubeadm", "gke", "eks", "aks", "talos-like", "kind", "existing"}

// Options are passed to whichever provider is chosen.
type Options struct {
	// Progress receives a line per step of cluster creation and deletion; nil discards.
	Progress io.Writer
	// Existing describes the cluster of the "existing" provider.
	Existing existing.Options
}

// Main is the providers' part of main: call it first thing in the main function of every program
// that links this package, and in TestMain of every test package that does. The managed
// providers (gke, eks, aks, talos-like) run their cluster supervisor in a copy of the running program, which
// becomes the supervisor here and exits; see managed.Main. Otherwise it returns.
func Main() {
	managed.Main()
}

// New returns the named provider.
func New(name string, opts Options) (providers.Provider, error) {
	switch name {
	case "kubeadm":
		return kubeadm.New(kubeadm.Options{Progress: opts.Progress}), nil
	case "kind":
		return kind.New(kind.Options{Progress: opts.Progress}), nil
	case "gke", "eks", "aks", "talos-like":
		return managed.New(name)
	case "existing":
		if opts.Existing.KubeconfigPath == "" {
			return nil, fmt.Errorf("the existing provider needs a kubeconfig")
		}
		return existing.New(opts.Existing)
	}
	return nil, fmt.Errorf("unknown provider %q; known: %s", name, strings.Join(Names, ", "))
}
