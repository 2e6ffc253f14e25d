package deploycheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sealion.dev/core/testing/controlplane"
)

// docsDir holds the documentation whose YAML examples users copy.
const docsDir = repoRoot + "/docs"

// docExample is one ```yaml block of a page: where it starts, and its text without the indentation
// of a list item.
type docExample struct {
	file string
	line int
	yaml string
}

// docExamples returns every YAML block of the Markdown pages below dir.
func docExamples(t *testing.T, dir string) []docExample {
	t.Helper()
	var out []docExample
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.Split(string(data), "\n")
		for i := 0; i < len(lines); i++ {
			fence := strings.TrimLeft(lines[i], " ")
			if fence != "```yaml" {
				continue
			}
			indent := len(lines[i]) - len(fence)
			start := i + 1
			var block []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				block = append(block, strings.TrimPrefix(lines[i], strings.Repeat(" ", indent)))
			}
			out = append(out, docExample{file: path, line: start, yaml: strings.Join(block, "\n")})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The docs have examples, and each decodes as Kubernetes objects.
func TestDocExamplesDecode(t *testing.T) {
	examples := docExamples(t, docsDir)
	if len(examples) < 10 {
		t.Fatalf("found %d YAML examples in %s; are the how-tos there?", len(examples), docsDir)
	}
	for _, e := range examples {
		objects, err := Decode([]byte(e.yaml))
		if err != nil || len(objects) == 0 {
			t.Errorf("%s:%d: %d objects, %v", e.file, e.line, len(objects), err)
		}
	}
}

// Every YAML example of the docs is accepted by a real kube-apiserver with our CRDs, validated
// strictly against its OpenAPI (a misspelt or misplaced field fails), as a user's kubectl apply
// would send it.
func TestDocExamplesApplyToAPIServer(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{})
	kubectl := func(stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, cp.KubectlPath, append([]string{"--kubeconfig", cp.KubeconfigPath}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	crds, err := filepath.Glob(repoRoot + "/core/generated/crds/*.yaml")
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs: %v", err)
	}
	for _, crd := range crds {
		if out, err := kubectl("", "apply", "-f", crd); err != nil {
			t.Fatalf("%s: %v\n%s", crd, err, out)
		}
	}
	if out, err := kubectl("", "wait", "--for=condition=Established", "--timeout=30s", "crd", "--all"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	examples := docExamples(t, docsDir)
	// The namespaces the examples name exist, as the install creates them.
	var namespaces []string
	for _, e := range examples {
		objects, err := Decode([]byte(e.yaml))
		if err != nil {
			t.Fatalf("%s:%d: %v", e.file, e.line, err)
		}
		for _, o := range objects {
			if ns := o.GetNamespace(); ns != "" && !slices.Contains(namespaces, ns) {
				namespaces = append(namespaces, ns)
			}
		}
	}
	var nsYAML bytes.Buffer
	for _, ns := range namespaces {
		fmt.Fprintf(&nsYAML, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns)
	}
	if out, err := kubectl(nsYAML.String(), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, e := range examples {
		t.Run(fmt.Sprintf("%s:%d", strings.TrimPrefix(e.file, docsDir+"/"), e.line), func(t *testing.T) {
			if out, err := kubectl(e.yaml, "apply", "--dry-run=server", "--validate=strict", "-f", "-"); err != nil {
				t.Errorf("%v\n%s", err, out)
			}
		})
	}
}
