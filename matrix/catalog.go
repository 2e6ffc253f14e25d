// Package matrix describes the conformance matrix: cells are a distribution (a cluster provider)
// x a Kubernetes version x an identity path (a way to log in), each proved by e2e tests, plus the
// CredentialIssuer strategy every cell's cluster is expected to use. The catalog (catalog.yaml)
// says what exists; Plan expands and filters it into groups, one cluster each; Attribute turns a
// group's `go test -json` report into pass, fail or the reason a cell did not run.
package matrix

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"sealion.dev/providers/existing"
)

//go:embed catalog.yaml
var defaultCatalog []byte

// Catalog is the content of catalog.yaml.
type Catalog struct {
	// Package is the e2e suite package of tests that name no other.
	Package string `json:"package"`
	// Suite are tests every cell runs besides its paths' tests.
	Suite []string `json:"suite"`
	// NotInMatrix are tests of Package the matrix leaves out on purpose.
	NotInMatrix   []string       `json:"notInMatrix,omitempty"`
	Strategies    []Strategy     `json:"strategies"`
	Distributions []Distribution `json:"distributions"`
	Paths         []IdentityPath `json:"paths"`
	Artifacts     []Artifact     `json:"artifacts"`
}

// Strategy is a CredentialIssuer strategy and the suite tests that prove it is in use.
type Strategy struct {
	Name  string   `json:"name"`
	Tests []string `json:"tests"`
}

// Distribution is a kind of cluster, made by the provider of the same name.
type Distribution struct {
	Name string `json:"name"`
	// Simulates names the platform the distribution imitates on this machine (a kubeadm-built
	// cluster shaped like GKE is not GKE); reports label it so. Empty for a real distribution.
	Simulates string `json:"simulates,omitempty"`
	// Strategy is the expected CredentialIssuer strategy; empty means reported, not asserted.
	Strategy string `json:"strategy,omitempty"`
	// StrategyFromProfile means the plan takes Strategy from the existing provider's profile.
	StrategyFromProfile bool `json:"strategyFromProfile,omitempty"`
	// OnHost means the provider changes this machine.
	OnHost bool `json:"onHost,omitempty"`
	// ClusterVersion means the cluster brings its own Kubernetes version.
	ClusterVersion bool `json:"clusterVersion,omitempty"`
	// Env lists variables that must be set for it to run.
	Env []string `json:"env,omitempty"`
	// Needs names the artifacts built before its clusters start.
	Needs []string `json:"needs,omitempty"`
}

// IdentityPath is a way to log in and the e2e tests that prove it; no tests means not built yet.
type IdentityPath struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Package     string   `json:"package,omitempty"`
	Tests       []string `json:"tests,omitempty"`
	// Distributions, when set, are the only distributions with a cell of this path.
	Distributions []string `json:"distributions,omitempty"`
}

// On reports whether the path has a cell on the distribution.
func (p IdentityPath) On(distribution string) bool {
	return len(p.Distributions) == 0 || slices.Contains(p.Distributions, distribution)
}

// Built reports whether the path has e2e tests.
func (p IdentityPath) Built() bool { return len(p.Tests) > 0 }

// Artifact is a command that builds or starts something cells need.
type Artifact struct {
	Name    string   `json:"name"`
	Dir     string   `json:"dir"`
	Command []string `json:"command"`
	// Cleanup, when set, undoes Command at the end of the run (stops what it started).
	Cleanup []string `json:"cleanup,omitempty"`
	// CannotRunExit, when not 0, is the exit status by which Command says the artifact cannot be
	// made on this machine at all: the cells needing it cannot run here (the reason is the
	// command's last line), rather than fail.
	CannotRunExit int `json:"cannotRunExit,omitempty"`
}

// DefaultCatalog is the catalog.yaml next to this file.
func DefaultCatalog() (Catalog, error) { return ParseCatalog(defaultCatalog) }

// ParseCatalog reads and checks a catalog: unknown fields, duplicate or missing names and
// dangling references are errors.
func ParseCatalog(data []byte) (Catalog, error) {
	var c Catalog
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return c, fmt.Errorf("matrix catalog: %w", err)
	}
	return c, c.validate()
}

func (c Catalog) validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if c.Package == "" {
		bad("package is empty")
	}
	names := func(kind string, list []string) {
		seen := map[string]bool{}
		for _, n := range list {
			switch {
			case n == "" || strings.ContainsAny(n, "/*?[]{}, "):
				bad("%s name %q is empty or holds a character cell patterns use", kind, n)
			case seen[n]:
				bad("%s %q is listed twice", kind, n)
			}
			seen[n] = true
		}
	}
	names("distribution", mapNames(c.Distributions, func(d Distribution) string { return d.Name }))
	names("path", mapNames(c.Paths, func(p IdentityPath) string { return p.Name }))
	names("strategy", mapNames(c.Strategies, func(s Strategy) string { return s.Name }))
	names("artifact", mapNames(c.Artifacts, func(a Artifact) string { return a.Name }))
	for _, s := range c.Strategies {
		for _, t := range s.Tests {
			if !slices.Contains(c.Suite, t) {
				bad("strategy %s: test %s is not in the suite, so no cell would run it", s.Name, t)
			}
		}
	}
	for _, d := range c.Distributions {
		if d.Strategy != "" && c.strategy(d.Strategy) == nil {
			bad("distribution %s: unknown strategy %q", d.Name, d.Strategy)
		}
		if d.StrategyFromProfile && (d.Strategy != "" || d.Name != existing.Name) {
			bad("distribution %s: strategyFromProfile is for the %s distribution, without a strategy of its own", d.Name, existing.Name)
		}
		for _, n := range d.Needs {
			if c.artifact(n) == nil {
				bad("distribution %s: unknown artifact %q", d.Name, n)
			}
		}
	}
	for _, p := range c.Paths {
		for _, d := range p.Distributions {
			if c.Distribution(d) == nil {
				bad("path %s: unknown distribution %q", p.Name, d)
			}
		}
	}
	for _, a := range c.Artifacts {
		if len(a.Command) == 0 {
			bad("artifact %s has no command", a.Name)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("matrix catalog: %s", strings.Join(errs, "; "))
	}
	return nil
}

func mapNames[T any](list []T, name func(T) string) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = name(v)
	}
	return out
}

func (c Catalog) strategy(name string) *Strategy {
	for i := range c.Strategies {
		if c.Strategies[i].Name == name {
			return &c.Strategies[i]
		}
	}
	return nil
}

func (c Catalog) artifact(name string) *Artifact {
	for i := range c.Artifacts {
		if c.Artifacts[i].Name == name {
			return &c.Artifacts[i]
		}
	}
	return nil
}

// Artifact returns the named artifact, nil when the catalog has none.
func (c Catalog) Artifact(name string) *Artifact { return c.artifact(name) }

// Distribution returns the named distribution, nil when the catalog has none.
func (c Catalog) Distribution(name string) *Distribution {
	for i := range c.Distributions {
		if c.Distributions[i].Name == name {
			return &c.Distributions[i]
		}
	}
	return nil
}

// packageOf is the suite package of a path's tests.
func (c Catalog) packageOf(p IdentityPath) string {
	if p.Package != "" {
		return p.Package
	}
	return c.Package
}
