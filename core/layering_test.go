package core_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// forbidden lists, per top-level folder, the folders its packages must not import, directly or
// through others: data flows one way (core -> servers -> CLI and harness), and the CLI and the
// harness talk to the servers over the wire only.
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
// the servers' integration tests run real upstreams from fixtures (slapd for the Supervisor's
// load run).
var testsMayUse = map[string][]string{
	"servers": {"fixtures"},
}

const module = "sealion.dev/"

func TestLayering(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the whole module; skipped under -short")
	}
	cmd := exec.Command("go", "list", "-test", "-deps=false", "-json=ImportPath,Imports,Deps", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	checked := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		from := topFolder(p.ImportPath)
		isTest := strings.Contains(p.ImportPath, " [") || strings.HasSuffix(p.ImportPath, ".test")
		for _, dep := range p.Deps {
			to := topFolder(dep)
			for _, bad := range forbidden[from] {
				if to == bad && !(isTest && slices.Contains(testsMayUse[from], to)) {
					t.Errorf("%s depends on %s: %s must not import %s", p.ImportPath, dep, from, bad)
				}
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("go list returned no packages")
	}
}

// topFolder is the first path element under the module, or "" outside it.
func topFolder(importPath string) string {
	// Test variants look like "sealion.dev/x/y [sealion.dev/x/y.test]".
	importPath, _, _ = strings.Cut(importPath, " ")
	rest, ok := strings.CutPrefix(importPath, module)
	if !ok {
		return ""
	}
	top, _, _ := strings.Cut(rest, "/")
	return top
}
