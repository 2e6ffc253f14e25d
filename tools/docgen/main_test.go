package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

const crdDir = "../../core/generated/crds"

// Every field of every CRD's spec and status has its row, and each kind its section.
func TestReferenceListsEveryField(t *testing.T) {
	page, err := reference(crdDir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", crdDir, err)
	}
	rows := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(page), "\n## "+crd.Spec.Names.Kind+"\n") {
			t.Errorf("no section for %s", crd.Spec.Names.Kind)
		}
		root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		for _, top := range []string{"spec", "status"} {
			if s, ok := root.Properties[top]; ok {
				for _, path := range paths(top, s) {
					rows++
					if !strings.Contains(string(page), "| `"+path+"` |") {
						t.Errorf("%s: no row for %s", crd.Spec.Names.Kind, path)
					}
				}
			}
		}
	}
	if rows < 100 {
		t.Errorf("only %d fields checked", rows)
	}
}

// Constraints reach the reader: required, default, enum, pattern, lengths.
func TestCellShowsConstraints(t *testing.T) {
	one, pattern := int64(1), "^https://"
	got := cell(apiextensionsv1.JSONSchemaProps{
		Description: "Issuer is | the URL.",
		Pattern:     pattern,
		MinLength:   &one,
		Enum:        []apiextensionsv1.JSON{{Raw: []byte(`"a"`)}, {Raw: []byte(`"b"`)}},
		Default:     &apiextensionsv1.JSON{Raw: []byte(`"a"`)},
	}, true)
	want := "*Required.* Issuer is \\| the URL. (default `\"a\"`; one of `\"a\"`, `\"b\"`; matches `^https://`; at least 1 character)"
	if got != want {
		t.Errorf("cell =\n%s\nwant\n%s", got, want)
	}
}

func paths(path string, s apiextensionsv1.JSONSchemaProps) []string {
	if s.Items != nil && s.Items.Schema != nil {
		return paths(path+"[]", *s.Items.Schema)
	}
	var out []string
	for n, p := range s.Properties {
		out = append(out, path+"."+n)
		out = append(out, paths(path+"."+n, p)...)
	}
	return out
}

// The conditions page has each package's vocabulary, its values with their meaning.
func TestConditionsPage(t *testing.T) {
	page, err := conditions("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| `AuthenticatorValid` | reports whether a token authenticator could be built. |",
		"| `FetchedKey` | means the cluster signing key was read. |",
		"| `SearchBaseFound` |",
		"| `IdentityProvidersFound` |",
		"## CredentialIssuer\n\nStrategy statuses:",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// A status constant without a doc comment is refused: the page would have a row without meaning.
func TestConditionsNeedComments(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "c.go"), []byte("package v1\n\nconst (\n\t// ConditionA reports a.\n\tConditionA = \"A\"\n\tReasonB = \"B\"\n)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := statusConstants(dir); err == nil || !strings.Contains(err.Error(), "ReasonB has no doc comment") {
		t.Errorf("statusConstants = %v, want ReasonB refused", err)
	}
}

// Every key of both servers' configuration files has its row, with the meaning its field's doc
// comment gives.
func TestConfigReference(t *testing.T) {
	page, err := configReference("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Concierge\n\nConfigMap `pinniped-concierge-config`",
		"| `kubeCertAgent.image` | string |",
		"| `api.servingCertificate.renewBeforeSeconds` | integer |",
		"| `tls.onedottwo.allowedCiphers` | list of string |",
		"## Supervisor\n\nConfigMap `pinniped-supervisor-static-config`",
		"| `endpoints.https.network` | string | is tcp, unix or disabled. |",
		"| `oidc.ignoreUserInfoEndpoint.whenIssuerExactlyMatches` | list of string |",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(string(page), "TLSProfile") || strings.Contains(string(page), "`tlsProfile`") {
		t.Error("a field the file cannot set (json \"-\") is listed")
	}
}
