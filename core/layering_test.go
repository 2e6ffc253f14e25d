package core_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The import rules of the module. Data flows one way: core is the shared leaf; the servers and
// the CLI build on it; the harness (providers, fixtures, e2e, matrix) talks to the servers over the
// wire only. tools/ and fixtures/dex/server are modules of their own and import nothing of ours
// but what their go.mod allows.

// forbidden lists, per top-level folder, the folders its packages must not import, directly or
// through others.
var forbidden = map[string][]string{
	"core":      {"servers", "cli", "providers", "fixtures", "e2e", "matrix"},
	"servers":   {"cli", "providers", "fixtures", "e2e", "matrix"},
	"cli":       {"servers", "providers", "fixtures", "e2e", "matrix"},
	"providers": {"servers", "cli", "e2e", "matrix"},
	"fixtures":  {"servers", "cli", "providers", "e2e", "matrix"},
	"e2e":       {"servers", "cli", "matrix"},
	"matrix":    {"servers", "cli"},
}

// testsMayUse lists, per top-level folder, what its tests (not its packages) may import besides:
// the servers' integration tests run real upstreams from fixtures (slapd, Samba, the GitHub
// double, Chromium).
var testsMayUse = map[string][]string{
	"servers": {"fixtures"},
}

// coreUsers are the programs and the harness that core serves; a core package used by only one
// of them belongs to that one.
var coreUsers = []string{"servers/concierge", "servers/supervisor", "servers/local-user-authenticator", "servers/kube-cert-agent", "servers/internal", "cli", "e2e"}

const module = "sealion.dev"

// pkg is one package of the module: its name, what its files import, and what its tests import
// besides.
type pkg struct {
	name                 string
	imports, testImports []string
}

// TestImportRules reads the import clauses of every package (go/parser, no build, so it runs in
// a second under -short) and checks the rules above on the module's own import graph.
func TestImportRules(t *testing.T) {
	pkgs := loadPackages(t)
	if len(pkgs) < 50 {
		t.Fatalf("found only %d packages; is the test run from core/?", len(pkgs))
	}
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		from := topFolder(p)
		check := func(deps []string, isTest bool) {
			for _, dep := range deps {
				to := topFolder(dep)
				for _, bad := range forbidden[from] {
					if to == bad && !(isTest && slices.Contains(testsMayUse[from], to)) {
						t.Errorf("%s depends on %s: %s must not import %s", p, dep, from, bad)
					}
				}
				if a, b := server(p), server(dep); a != "" && b != "" && a != b && b != "servers/internal" {
					t.Errorf("%s depends on %s: one server must not import another's packages", p, dep)
				}
			}
		}
		check(closure(pkgs, pkgs[p].imports), false)
		check(closure(pkgs, pkgs[p].testImports), true)
	}
}

// TestCoreIsShared fails for a core package that only one program (or the harness) uses,
// directly or through other core packages: it belongs under that program.
func TestCoreIsShared(t *testing.T) {
	pkgs := loadPackages(t)
	users := map[string]map[string]bool{}
	for p, info := range pkgs {
		user := ""
		for _, u := range coreUsers {
			if p == u || strings.HasPrefix(p, u+"/") {
				user = u
			}
		}
		if user == "" {
			continue
		}
		for _, dep := range closure(pkgs, append(slices.Clone(info.imports), info.testImports...)) {
			if topFolder(dep) == "core" {
				if users[dep] == nil {
					users[dep] = map[string]bool{}
				}
				users[dep][user] = true
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		// API types and generated clients are core by definition: they are the wire.
		if topFolder(p) != "core" || p == "core" || strings.HasPrefix(p, "core/apis") || strings.HasPrefix(p, "core/generated") {
			continue
		}
		if n := len(users[p]); n < 2 {
			t.Errorf("core/%s is used by %d of %v (%v): move it under its only user", strings.TrimPrefix(p, "core/"), n, coreUsers, slices.Sorted(maps.Keys(users[p])))
		}
	}
}

// TestPackageNames fails when two packages with different paths share a name, unless they are
// the same job in parallel places (each server's own config, server, apiserver...; each fixture's
// runner in a cluster, incluster): those share the last folder and sit at the same depth under
// different servers, or under different fixtures.
func TestPackageNames(t *testing.T) {
	byName := map[string][]string{}
	for p, info := range loadPackages(t) {
		if strings.Contains(p, "/generated/") || strings.Contains(p, "/apis/") || info.name == "main" || info.name == "" {
			continue // commands; generated clients and API versions follow Kubernetes' own layout
		}
		byName[info.name] = append(byName[info.name], p)
	}
	for name, paths := range byName {
		if len(paths) < 2 {
			continue
		}
		slices.Sort(paths)
		if !parallel(paths) {
			t.Errorf("%d packages are named %s: %v; give each a name that says its job", len(paths), name, paths)
		}
	}
}

// parallel reports whether every path is the same place under a different server, or under a
// different fixture: servers/<a>/X and servers/<b>/X, fixtures/<a>/X and fixtures/<b>/X.
func parallel(paths []string) bool {
	rest := map[string]bool{}
	for _, p := range paths {
		o := owner(p)
		if o == "" {
			return false
		}
		rest[topFolder(p)+" "+strings.TrimPrefix(p, o)] = true
	}
	return len(rest) == 1
}

// owner is "servers/<name>" for a package under a server and "fixtures/<name>" for one under a
// fixture, "" otherwise (their shared internal folders included).
func owner(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) < 2 || (parts[0] != "servers" && parts[0] != "fixtures") || parts[1] == "internal" {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

// server is "servers/<name>" for a package under a server, "" otherwise.
func server(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) < 2 || parts[0] != "servers" {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

// loadPackages parses the import clauses of every .go file of the module, keyed by the package's
// path below the module ("servers/concierge/server"). Nested modules, testdata and _output are
// not part of it.
func loadPackages(t *testing.T) map[string]*pkg {
	t.Helper()
	root, files := goFiles(t)
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	for _, rel := range files {
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if pkgs[dir] == nil {
			pkgs[dir] = &pkg{}
		}
		// A folder of tests only is named by them.
		if name := f.Name.Name; !strings.HasSuffix(rel, "_test.go") || pkgs[dir].name == "" && !strings.HasSuffix(name, "_test") {
			pkgs[dir].name = name
		}
		for _, imp := range f.Imports {
			ip := strings.Trim(imp.Path.Value, `"`)
			rest, ok := strings.CutPrefix(ip, module+"/")
			if !ok {
				continue
			}
			if strings.HasSuffix(rel, "_test.go") {
				pkgs[dir].testImports = append(pkgs[dir].testImports, rest)
			} else {
				pkgs[dir].imports = append(pkgs[dir].imports, rest)
			}
		}
	}
	return pkgs
}

// goFiles lists the module's Go files, relative to its root (returned too), leaving out hidden
// and underscore folders, testdata and other modules.
func goFiles(t *testing.T) (root string, files []string) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return root, files
}

// TestOnlyStartForTestChecksShort: make integration runs the packages whose test files call
// testing.Short() or controlplane.StartForTest, found by name (the unit tier, under -short, has
// run every other package's tests in full). Another helper that checked testing.Short() would
// leave the packages whose tests call it out of that tier.
func TestOnlyStartForTestChecksShort(t *testing.T) {
	root, files := goFiles(t)
	var found []string
	for _, rel := range files {
		if strings.HasSuffix(rel, "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(src), "testing.Short()") {
			found = append(found, filepath.ToSlash(rel))
		}
	}
	if want := []string{"core/testing/controlplane/testing.go"}; !slices.Equal(found, want) {
		t.Errorf("non-test files that call testing.Short(): %v, want %v alone: make integration finds the packages to run by the "+
			"names testing.Short() and controlplane.StartForTest in their tests (the Makefile's INTEGRATION_PKGS)", found, want)
	}
}

// closure is every package of the module reachable from direct through non-test imports.
func closure(pkgs map[string]*pkg, direct []string) []string {
	seen := map[string]bool{}
	queue := slices.Clone(direct)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		if info := pkgs[p]; info != nil {
			queue = append(queue, info.imports...)
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// topFolder is the first path element.
func topFolder(p string) string {
	top, _, _ := strings.Cut(p, "/")
	return top
}

// loopMarks are what a controller loop of its own is written with: a workqueue, informer event
// handlers, or a periodic timer. Only core/controller may use them, so that every controller of
// both servers has the same retry, resync and first sync.
var loopMarks = []string{`"k8s.io/client-go/util/workqueue"`, ".AddEventHandler(", "wait.Until", "NewTicker("}

// TestOneControllerLoop fails when a package of the servers or of core (test harnesses aside)
// writes a controller loop of its own instead of using core/controller.
func TestOneControllerLoop(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, top := range []string{"servers", "core"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel == "core/controller" || rel == "core/testing" || rel == "core/generated" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			checked++
			for _, mark := range loopMarks {
				if strings.Contains(string(src), mark) {
					t.Errorf("%s uses %s: controllers run on core/controller", rel, mark)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d files; is the test run from core/?", checked)
	}
}

func TestParallel(t *testing.T) {
	for _, tt := range []struct {
		paths []string
		want  bool
	}{
		{[]string{"servers/concierge/server", "servers/supervisor/server"}, true},
		{[]string{"fixtures/dex/incluster", "fixtures/ldap/incluster"}, true},
		{[]string{"fixtures/dex/incluster", "servers/supervisor/incluster"}, false},
		{[]string{"fixtures/dex/incluster", "fixtures/ldap/cluster/incluster"}, false},
		{[]string{"fixtures/internal/incluster", "fixtures/ldap/incluster"}, false},
		{[]string{"servers/internal/config", "servers/concierge/config"}, false},
		{[]string{"core/config", "servers/concierge/config"}, false},
	} {
		if got := parallel(tt.paths); got != tt.want {
			t.Errorf("parallel(%v) = %v, want %v", tt.paths, got, tt.want)
		}
	}
}
