package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"sealion.dev/tools/deploycheck"
)

// devImage is the server image as the development manifests name it.
const devImage = devRepository + ":dev"

// installFile is one install YAML: its name, the kustomization it comes from, which of its
// objects it holds, and whether those run the server image.
type installFile struct {
	name, dir string
	keep      func(*unstructured.Unstructured) bool
	runsImage bool
}

func isCRD(o *unstructured.Unstructured) bool { return o.GetKind() == "CustomResourceDefinition" }
func all(*unstructured.Unstructured) bool     { return true }

// installFiles split the Concierge as Pinniped's releases do: its CRDs first, so that they are
// established before its CredentialIssuer is applied from the second file.
var installFiles = []installFile{
	{name: "install-pinniped-concierge-crds.yaml", dir: "servers/concierge/deploy", keep: isCRD},
	{name: "install-pinniped-concierge-resources.yaml", dir: "servers/concierge/deploy", keep: func(o *unstructured.Unstructured) bool { return !isCRD(o) }, runsImage: true},
	{name: "install-pinniped-supervisor.yaml", dir: "servers/supervisor/deploy", keep: all, runsImage: true},
	{name: "install-local-user-authenticator.yaml", dir: "servers/local-user-authenticator/deploy", keep: all, runsImage: true},
}

// installManifests writes the install YAMLs from the plain manifests (what kubectl apply -k
// builds), with every mention of the development image replaced by imageRef.
func (r *release) installManifests(imageRef string) error {
	for _, f := range installFiles {
		objects, err := deploycheck.Kustomize(filepath.Join(r.repoRoot, f.dir))
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		fmt.Fprintf(&buf, "# %s of sealion's Pinniped %s (commit %s): kubectl apply -f %s\n", f.name, r.version, r.commit, f.name)
		pinned := 0
		for _, o := range objects {
			if !f.keep(o) {
				continue
			}
			data, err := yaml.Marshal(o.Object)
			if err != nil {
				return err
			}
			// Only the exact development name is replaced; any other mention (another tag) would
			// be left unpinned.
			if strings.Count(string(data), devRepository) != strings.Count(string(data), devImage) {
				return fmt.Errorf("%s: %s %s names %s other than as %s", f.name, o.GetKind(), o.GetName(), devRepository, devImage)
			}
			if n := replaceStrings(o.Object, devImage, imageRef); n > 0 {
				pinned += n
				if data, err = yaml.Marshal(o.Object); err != nil {
					return err
				}
			}
			buf.WriteString("---\n")
			buf.Write(data)
		}
		if f.runsImage && pinned == 0 {
			return fmt.Errorf("%s: no object names the server image %s", f.name, devImage)
		}
		if err := os.WriteFile(filepath.Join(r.out, f.name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// replaceStrings replaces old by new in every string inside v (a decoded object), in place, and
// returns how many strings changed.
func replaceStrings(v any, old, new string) int {
	n := 0
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if s, ok := e.(string); ok {
				if r := strings.ReplaceAll(s, old, new); r != s {
					t[k], n = r, n+1
				}
				continue
			}
			n += replaceStrings(e, old, new)
		}
	case []any:
		for i, e := range t {
			if s, ok := e.(string); ok {
				if r := strings.ReplaceAll(s, old, new); r != s {
					t[i], n = r, n+1
				}
				continue
			}
			n += replaceStrings(e, old, new)
		}
	}
	return n
}
