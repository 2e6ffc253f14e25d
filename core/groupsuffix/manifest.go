package groupsuffix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// RewriteManifest renames our API groups in a stream of YAML documents, for installing with a
// non-default suffix. Besides the fields Transport rewrites (apiVersion, apiGroup, group such as a
// CRD's or APIService's spec.group, RBAC apiGroups), it renames CustomResourceDefinitions
// ("<plural>.<group>") and APIServices ("<version>.<group>"). Comments and key order are kept.
func RewriteManifest(yamlDocs []byte, suffix string) ([]byte, error) {
	if err := Validate(suffix); err != nil {
		return nil, err
	}
	if suffix == Default {
		return yamlDocs, nil
	}
	r := newReplacer(suffix)
	dec := yaml.NewDecoder(bytes.NewReader(yamlDocs))
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	for i := 1; ; i++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("decoding YAML document %d: %w", i, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		r.walkYAML(&doc)
		if err := enc.Encode(&doc); err != nil {
			return nil, fmt.Errorf("encoding YAML document %d: %w", i, err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding YAML documents: %w", err)
	}
	return out.Bytes(), nil
}

// walkYAML applies the same field rules as walk, to a YAML node tree.
func (r rewriter) walkYAML(node *yaml.Node) {
	switch node.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, child := range node.Content {
			r.walkYAML(child)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(node.Content); i += 2 {
			key, value := node.Content[i].Value, node.Content[i+1]
			switch {
			case userDataKeys[key]:
			case isString(value):
				if mapped, ok := r.field(key, value.Value); ok {
					value.Value = mapped
				}
			case key == "apiGroups" && value.Kind == yaml.SequenceNode:
				for _, item := range value.Content {
					if isString(item) {
						if mapped, ok := r.mapGroup(item.Value); ok {
							item.Value = mapped
						}
					}
				}
			default:
				r.walkYAML(value)
			}
		}
		r.objectName(node)
	}
}

// objectName renames CustomResourceDefinitions and APIServices, whose names embed their group.
func (r rewriter) objectName(obj *yaml.Node) {
	apiVersion, kind := mappingValue(obj, "apiVersion"), mappingValue(obj, "kind")
	if apiVersion == nil || kind == nil {
		return
	}
	group, _, _ := strings.Cut(apiVersion.Value, "/")
	switch {
	case group == "apiextensions.k8s.io" && kind.Value == "CustomResourceDefinition",
		group == "apiregistration.k8s.io" && kind.Value == "APIService":
	default:
		return
	}
	if name := mappingValue(mappingValue(obj, "metadata"), "name"); name != nil && isString(name) {
		if mapped, ok := r.mapGroup.dottedName(name.Value); ok {
			name.Value = mapped
		}
	}
}

func mappingValue(node *yaml.Node, key string) *yaml.Node {
	if node == nil || node.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == key {
			return node.Content[i+1]
		}
	}
	return nil
}

func isString(node *yaml.Node) bool {
	return node.Kind == yaml.ScalarNode && node.ShortTag() == "!!str"
}
