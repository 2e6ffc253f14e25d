package apis_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"sigs.k8s.io/yaml"
)

const crdDir = "../generated/crds"

// TestCRDs checks every generated CRD manifest: it must be a valid apiextensions.k8s.io/v1 CRD
// (as the API server would validate it, including its CEL rules) and declare the group, kind,
// scope, categories, status subresource and printer columns that clients rely on.
func TestCRDs(t *testing.T) {
	t.Parallel()
	authenticatorCategories := []string{"pinniped", "pinniped-authenticator", "pinniped-authenticators"}
	idpCategories := []string{"pinniped", "pinniped-idp", "pinniped-idps"}
	tests := []struct {
		file       string
		group      string
		kind       string
		scope      apiextensionsv1.ResourceScope
		categories []string
		columns    []string
	}{
		{
			file:       "authentication.concierge.pinniped.dev_jwtauthenticators.yaml",
			group:      "authentication.concierge.pinniped.dev",
			kind:       "JWTAuthenticator",
			scope:      apiextensionsv1.ClusterScoped,
			categories: authenticatorCategories,
			columns:    []string{"Issuer", "Audience", "Status", "Age"},
		},
		{
			file:       "authentication.concierge.pinniped.dev_webhookauthenticators.yaml",
			group:      "authentication.concierge.pinniped.dev",
			kind:       "WebhookAuthenticator",
			scope:      apiextensionsv1.ClusterScoped,
			categories: authenticatorCategories,
			columns:    []string{"Endpoint", "Status", "Age"},
		},
		{
			file:       "config.concierge.pinniped.dev_credentialissuers.yaml",
			group:      "config.concierge.pinniped.dev",
			kind:       "CredentialIssuer",
			scope:      apiextensionsv1.ClusterScoped,
			categories: []string{"pinniped"},
			columns:    []string{"ProxyMode", "DefaultStrategy", "Age"},
		},
		{
			file:       "config.supervisor.pinniped.dev_federationdomains.yaml",
			group:      "config.supervisor.pinniped.dev",
			kind:       "FederationDomain",
			scope:      apiextensionsv1.NamespaceScoped,
			categories: []string{"pinniped"},
			columns:    []string{"Issuer", "Status", "Age"},
		},
		{
			file:       "config.supervisor.pinniped.dev_oidcclients.yaml",
			group:      "config.supervisor.pinniped.dev",
			kind:       "OIDCClient",
			scope:      apiextensionsv1.NamespaceScoped,
			categories: []string{"pinniped"},
			columns:    []string{"Privileged Scopes", "Client Secrets", "Status", "Age"},
		},
		{
			file:       "config.supervisor.pinniped.dev_sessionrevocations.yaml",
			group:      "config.supervisor.pinniped.dev",
			kind:       "SessionRevocation",
			scope:      apiextensionsv1.NamespaceScoped,
			categories: []string{"pinniped"},
			columns:    []string{"Federation Domain", "Revoked Sessions", "Status", "Age"},
		},
		{
			file:       "idp.supervisor.pinniped.dev_oidcidentityproviders.yaml",
			group:      "idp.supervisor.pinniped.dev",
			kind:       "OIDCIdentityProvider",
			scope:      apiextensionsv1.NamespaceScoped,
			categories: idpCategories,
			columns:    []string{"Issuer", "Status", "Age"},
		},
		{
			file:       "idp.supervisor.pinniped.dev_ldapidentityproviders.yaml",
			group:      "idp.supervisor.pinniped.dev",
			kind:       "LDAPIdentityProvider",
			scope:      apiextensionsv1.NamespaceScoped,
			categories: idpCategories,
			columns:    []string{"Host", "Status", "Age"},
		},
		{
			file:       "idp.supervisor.pinniped.dev_activedirectoryidentityproviders.yaml",
			group:      "idp.supervisor.pinniped.dev",
			kind:       "ActiveDirectoryIdentityProvider",
			scope:      apiextensionsv1.NamespaceScoped,
			categories: idpCategories,
			columns:    []string{"Host", "Status", "Age"},
		},
		{
			file:       "idp.supervisor.pinniped.dev_githubidentityproviders.yaml",
			group:      "idp.supervisor.pinniped.dev",
			kind:       "GitHubIdentityProvider",
			scope:      apiextensionsv1.NamespaceScoped,
			categories: idpCategories,
			columns:    []string{"Host", "Status", "Age"},
		},
	}

	t.Run("no other manifests", func(t *testing.T) {
		t.Parallel()
		found, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
		if err != nil {
			t.Fatalf("listing %s: %v", crdDir, err)
		}
		var want []string
		for _, tt := range tests {
			want = append(want, filepath.Join(crdDir, tt.file))
		}
		slices.Sort(found)
		slices.Sort(want)
		if !slices.Equal(found, want) {
			t.Errorf("manifests in %s:\n got %v\nwant %v", crdDir, found, want)
		}
	})

	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			t.Parallel()
			crd, _ := readCRD(t, filepath.Join(crdDir, tt.file))

			if crd.Spec.Group != tt.group {
				t.Errorf("group: got %q, want %q", crd.Spec.Group, tt.group)
			}
			if crd.Spec.Names.Kind != tt.kind {
				t.Errorf("kind: got %q, want %q", crd.Spec.Names.Kind, tt.kind)
			}
			if crd.Spec.Scope != tt.scope {
				t.Errorf("scope: got %q, want %q", crd.Spec.Scope, tt.scope)
			}
			if !slices.Equal(crd.Spec.Names.Categories, tt.categories) {
				t.Errorf("categories: got %v, want %v", crd.Spec.Names.Categories, tt.categories)
			}
			if len(crd.Spec.Versions) != 1 {
				t.Fatalf("got %d versions, want only v1alpha1", len(crd.Spec.Versions))
			}
			version := crd.Spec.Versions[0]
			if version.Name != "v1alpha1" || !version.Served || !version.Storage {
				t.Errorf("version: got %q (served %t, storage %t), want v1alpha1 served and stored",
					version.Name, version.Served, version.Storage)
			}
			if version.Subresources == nil || version.Subresources.Status == nil {
				t.Errorf("status subresource missing")
			}
			var columns []string
			for _, column := range version.AdditionalPrinterColumns {
				columns = append(columns, column.Name)
			}
			if !slices.Equal(columns, tt.columns) {
				t.Errorf("printer columns: got %v, want %v", columns, tt.columns)
			}
		})
	}
}

// readCRD decodes a manifest strictly and fails the test unless the API server would accept it.
// It returns the CRD both as written and in the API server's internal form.
func readCRD(t *testing.T, path string) (*apiextensionsv1.CustomResourceDefinition, *apiextensions.CustomResourceDefinition) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading CRD manifest: %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatalf("decoding %s as an apiextensions.k8s.io/v1 CRD: %v", path, err)
	}
	if crd.APIVersion != apiextensionsv1.SchemeGroupVersion.String() || crd.Kind != "CustomResourceDefinition" {
		t.Fatalf("%s is a %s %s, want an apiextensions.k8s.io/v1 CustomResourceDefinition",
			path, crd.APIVersion, crd.Kind)
	}

	defaulted := crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(defaulted)
	internal := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(defaulted, internal, nil); err != nil {
		t.Fatalf("converting %s to the internal CRD type: %v", path, err)
	}
	if errs := validation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
		t.Fatalf("the API server would reject %s: %v", path, errs.ToAggregate())
	}
	return crd, internal
}
