// Command crdname adds validation of metadata.name to a CRD manifest that controller-gen wrote.
// controller-gen always reduces a top-level metadata schema to `type: object`, so no marker on the
// Go type can say what names a kind accepts; upstream Pinniped adds the same schema in its install
// overlay, and the API server's messages then name the pattern (`metadata.name in body should
// match '...'`), which clients and scripts compare.
//
// Usage: crdname -pattern REGEXP FILE
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	pattern := flag.String("pattern", "", "the regular expression every name must match")
	flag.Parse()
	if *pattern == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: crdname -pattern REGEXP FILE")
		os.Exit(2)
	}
	if err := rewrite(flag.Arg(0), *pattern); err != nil {
		fmt.Fprintf(os.Stderr, "crdname: %v\n", err)
		os.Exit(1)
	}
}

// documentStart is how controller-gen starts every manifest it writes.
const documentStart = "---\n"

func rewrite(file, pattern string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(bytes.TrimPrefix(data, []byte(documentStart)), &crd); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := addNameSchema(crd, pattern); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	return os.WriteFile(file, append([]byte(documentStart), out...), 0o644)
}

// addNameSchema sets the metadata schema of every version of crd to one that validates the name.
func addNameSchema(crd map[string]any, pattern string) error {
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	if len(versions) == 0 {
		return errors.New("no spec.versions")
	}
	name := map[string]any{"type": "string", "pattern": pattern}
	for i, v := range versions {
		version, _ := v.(map[string]any)
		schema, _ := version["schema"].(map[string]any)
		root, _ := schema["openAPIV3Schema"].(map[string]any)
		properties, _ := root["properties"].(map[string]any)
		if _, ok := properties["metadata"]; !ok {
			return fmt.Errorf("spec.versions[%d] has no metadata schema", i)
		}
		properties["metadata"] = map[string]any{
			"type":       "object",
			"properties": map[string]any{"name": name},
		}
	}
	return nil
}
