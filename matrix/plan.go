package matrix

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"sealion.dev/matrix/hostcheck"
	"sealion.dev/matrix/kubeversions"
	"sealion.dev/providers/existing"
)

// ClusterVersionLabel is the version of cells whose cluster brings its own Kubernetes version.
const ClusterVersionLabel = "cluster"

// Cell is one distribution x version x identity path.
type Cell struct {
	Distribution, Version, Path string
}

func (c Cell) String() string { return c.Distribution + "/" + c.Version + "/" + c.Path }

// Filter selects cells: a list of patterns distribution/version/path, each part a glob
// (path.Match syntax plus {a,b} alternatives); missing trailing parts match anything. A pattern
// that starts with "-" takes the cells it matches away from those the others select (from every
// cell when it has no others): CI's subset runs a costly path on one distribution of those that
// have it. The versions NewestMinor and OldestMinor stand for the newest and the oldest minor of
// the run (see WithMinors).
type Filter []pattern

// NewestMinor and OldestMinor are the versions that name the newest and the oldest minor of the
// run in a filter, so that CI can always run them without knowing which they are today: a
// library upgrade breaks the oldest clusters first.
const (
	NewestMinor = "newest"
	OldestMinor = "oldest"
)

// WithMinors returns the filter with the versions NewestMinor and OldestMinor replaced by newest
// and oldest ("1.37", "1.31").
func (f Filter) WithMinors(newest, oldest string) Filter {
	out := make(Filter, len(f))
	for i, p := range f {
		p.parts[1] = slices.Clone(p.parts[1])
		for j, alt := range p.parts[1] {
			switch alt {
			case NewestMinor:
				p.parts[1][j] = newest
			case OldestMinor:
				p.parts[1][j] = oldest
			}
		}
		out[i] = p
	}
	return out
}

type pattern struct {
	text    string
	exclude bool        // the pattern began with "-"
	parts   [3][]string // alternatives per dimension
}

// ParseFilter reads patterns separated by spaces or by commas outside braces, e.g.
// "kind/1.33/*", "kubeadm,gke/1.3?/webhook", "{kubeadm,gke}/1.33/{webhook,dex-browser}",
// "kubeadm/1.33 -kubeadm/*/faults". An empty filter selects every cell.
func ParseFilter(s string) (Filter, error) {
	var f Filter
	for _, text := range splitPatterns(s) {
		glob, exclude := strings.CutPrefix(text, "-")
		parts := strings.Split(glob, "/")
		if len(parts) > 3 {
			return nil, fmt.Errorf("cell pattern %q has more than distribution/version/path", text)
		}
		p := pattern{text: text, exclude: exclude}
		for i := range p.parts {
			glob := "*"
			if i < len(parts) && parts[i] != "" {
				glob = parts[i]
			}
			alts, err := expandBraces(glob)
			if err != nil {
				return nil, fmt.Errorf("cell pattern %q: %w", text, err)
			}
			for _, a := range alts {
				if _, err := path.Match(a, ""); err != nil {
					return nil, fmt.Errorf("cell pattern %q: %q: %w", text, a, err)
				}
			}
			p.parts[i] = alts
		}
		f = append(f, p)
	}
	return f, nil
}

func splitPatterns(s string) []string {
	var out []string
	depth, start := 0, 0
	flush := func(end int) {
		if t := strings.TrimSpace(s[start:end]); t != "" {
			out = append(out, t)
		}
	}
	for i, r := range s {
		switch {
		case r == '{':
			depth++
		case r == '}':
			depth--
		case depth == 0 && (r == ',' || r == ' ' || r == '\t' || r == '\n'):
			flush(i)
			start = i + 1
		}
	}
	flush(len(s))
	return out
}

// expandBraces turns "a{b,c}d" into [abd acd]; one level of braces is enough for cell names.
func expandBraces(glob string) ([]string, error) {
	open := strings.IndexByte(glob, '{')
	if open < 0 {
		if strings.IndexByte(glob, '}') >= 0 {
			return nil, fmt.Errorf("unbalanced braces in %q", glob)
		}
		return []string{glob}, nil
	}
	end := strings.IndexByte(glob[open:], '}')
	if end < 0 {
		return nil, fmt.Errorf("unbalanced braces in %q", glob)
	}
	end += open
	rest, err := expandBraces(glob[end+1:])
	if err != nil {
		return nil, err
	}
	var out []string
	for _, alt := range strings.Split(glob[open+1:end], ",") {
		if strings.ContainsAny(alt, "{") {
			return nil, fmt.Errorf("nested braces in %q", glob)
		}
		for _, r := range rest {
			out = append(out, glob[:open]+alt+r)
		}
	}
	return out, nil
}

// match reports whether the pattern selects c (see Filter.Match).
func (p pattern) match(c Cell, release string) bool {
	values := [3][]string{{c.Distribution}, {c.Version}, {c.Path}}
	if release != "" {
		values[1] = append(values[1], release, strings.TrimPrefix(release, "v"))
	}
	for i, alts := range p.parts {
		if !slices.ContainsFunc(alts, func(glob string) bool {
			return slices.ContainsFunc(values[i], func(v string) bool { ok, _ := path.Match(glob, v); return ok })
		}) {
			return false
		}
	}
	return true
}

// Match reports whether the filter selects c, whose version may also be given by its release
// ("1.33.13" or "v1.33.13" match the cell 1.33 of v1.33.13): a pattern selects it, or there are
// only exclusions, and no exclusion matches it.
func (f Filter) Match(c Cell, release string) bool {
	selected, selecting := false, false
	for _, p := range f {
		switch {
		case p.exclude && p.match(c, release):
			return false
		case !p.exclude:
			selecting = true
			selected = selected || p.match(c, release)
		}
	}
	return selected || !selecting
}

// Group is the cells of one distribution and version: one cluster, one `go test` run.
type Group struct {
	Distribution Distribution
	// Version is the Kubernetes version; for a ClusterVersion distribution, Minor is "cluster"
	// and Release is empty.
	Version kubeversions.Version
	// Paths are the selected identity paths, built or not.
	Paths []IdentityPath
	// Blocked says why the group does not run (Status NotBuilt, CannotRun or NotRun); the zero
	// Outcome when it runs.
	Blocked Outcome
}

// Name is "distribution/version".
func (g Group) Name() string { return g.Distribution.Name + "/" + g.Version.Minor }

// Runs reports whether the group starts a cluster: nothing blocks it and a selected path is built.
func (g Group) Runs() bool {
	return g.Blocked.Status == "" && slices.ContainsFunc(g.Paths, IdentityPath.Built)
}

// Cells lists the group's cells.
func (g Group) Cells() []Cell {
	out := make([]Cell, len(g.Paths))
	for i, p := range g.Paths {
		out[i] = Cell{Distribution: g.Distribution.Name, Version: g.Version.Minor, Path: p.Name}
	}
	return out
}

// GoTest returns the packages and the -run expression of the group's `go test`: the suite and the
// tests of its built paths, anchored so only those top-level tests run.
func (g Group) GoTest(c Catalog) (packages []string, run string) {
	var names []string
	add := func(pkg string, tests ...string) {
		if !slices.Contains(packages, pkg) {
			packages = append(packages, pkg)
		}
		for _, t := range tests {
			if !slices.Contains(names, t) {
				names = append(names, t)
			}
		}
	}
	add(c.Package, c.Suite...)
	for _, p := range g.Paths {
		add(c.packageOf(p), p.Tests...)
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return packages, "^(" + strings.Join(quoted, "|") + ")$"
}

// PlanOptions are the facts a plan depends on besides the catalog.
type PlanOptions struct {
	// Versions are the Kubernetes versions of the matrix, oldest first.
	Versions []kubeversions.Version
	Filter   Filter
	// Providers are the provider names this build knows (providers/all.Names); a distribution
	// without one is not built yet.
	Providers []string
	// Host is this machine; SkipHostChecks runs versions its rules would block.
	Host           hostcheck.Host
	SkipHostChecks bool
	// Getenv is os.Getenv outside tests.
	Getenv func(string) string
	// Installed plans a run against what a user installed (matrix --installed): only on the
	// existing distribution, a cluster the user brings.
	Installed bool
}

// Plan expands the catalog into the groups the filter selects, in catalog order (distribution,
// then version). A pattern that selects nothing is an error, since it is most likely a typo.
func (c Catalog) Plan(o PlanOptions) ([]Group, error) {
	var groups []Group
	used := make([]bool, len(o.Filter))
	for _, d := range c.Distributions {
		if o.Installed && d.Name != existing.Name {
			continue
		}
		versions := o.Versions
		if d.ClusterVersion {
			versions = []kubeversions.Version{{Minor: ClusterVersionLabel}}
		}
		for _, v := range versions {
			g := Group{Distribution: d, Version: v}
			for _, p := range c.Paths {
				if !p.On(d.Name) {
					continue
				}
				cell := Cell{Distribution: d.Name, Version: v.Minor, Path: p.Name}
				for i, pat := range o.Filter {
					if pat.match(cell, v.Release) {
						used[i] = true
					}
				}
				if o.Filter.Match(cell, v.Release) {
					g.Paths = append(g.Paths, p)
				}
			}
			if len(g.Paths) == 0 {
				continue
			}
			var err error
			if g.Distribution, err = d.withProfileStrategy(o.Getenv); err != nil {
				return nil, err
			}
			g.Blocked = c.blocker(d, v, o)
			groups = append(groups, g)
		}
	}
	for i, u := range used {
		if !u && o.Installed {
			return nil, fmt.Errorf("cell pattern %q selects no cell: an installed run tests the %s distribution only (the cluster of KUBECONFIG)",
				o.Filter[i].text, existing.Name)
		}
		if !u {
			return nil, fmt.Errorf("cell pattern %q selects no cell (distributions: %s; versions: %s; paths: %s)",
				o.Filter[i].text, strings.Join(mapNames(c.Distributions, func(d Distribution) string { return d.Name }), " "),
				strings.Join(append(mapNames(o.Versions, func(v kubeversions.Version) string { return v.Minor }), ClusterVersionLabel), " "),
				strings.Join(mapNames(c.Paths, func(p IdentityPath) string { return p.Name }), " "))
		}
	}
	return groups, nil
}

// Selects reports whether the filter selects a cell of version v (of a distribution that runs
// the matrix's versions).
func (c Catalog) Selects(f Filter, v kubeversions.Version) bool {
	for _, d := range c.Distributions {
		for _, p := range c.Paths {
			if !d.ClusterVersion && p.On(d.Name) && f.Match(Cell{Distribution: d.Name, Version: v.Minor, Path: p.Name}, v.Release) {
				return true
			}
		}
	}
	return false
}

func (c Catalog) blocker(d Distribution, v kubeversions.Version, o PlanOptions) Outcome {
	if !slices.Contains(o.Providers, d.Name) {
		return Outcome{NotBuilt, fmt.Sprintf("no %q provider yet (providers/all)", d.Name)}
	}
	if v.Unserved != "" && !d.ClusterVersion {
		return Outcome{CannotRun, v.Unserved}
	}
	if d.OnHost && !d.ClusterVersion && !o.SkipHostChecks {
		if why := o.Host.Blocker(v.MinorNumber()); why != "" {
			return Outcome{CannotRun, why}
		}
	}
	getenv := o.Getenv
	for _, e := range d.Env {
		if getenv == nil || getenv(e) == "" {
			return Outcome{NotRun, fmt.Sprintf("%s is not set (the %s distribution needs it)", e, d.Name)}
		}
	}
	return Outcome{}
}
