package groupsuffix

import (
	"strings"
	"testing"
)

const manifest = `# CRDs for the Concierge.
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: jwtauthenticators.authentication.concierge.pinniped.dev
spec:
  group: authentication.concierge.pinniped.dev # the group
  names:
    kind: JWTAuthenticator
    plural: jwtauthenticators
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1alpha1.login.concierge.pinniped.dev
  labels:
    app: login.concierge.pinniped.dev
spec:
  group: login.concierge.pinniped.dev
  version: v1alpha1
  groupPriorityMinimum: 9900
  versionPriority: 15
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: pinniped-concierge-pre-authn-apis
rules:
  - apiGroups: [login.concierge.pinniped.dev, identity.concierge.pinniped.dev]
    resources: [tokencredentialrequests, whoamirequests]
    verbs: [create, list]
  - apiGroups:
      - ""
    resources: [secrets]
    verbs: [get]
---
apiVersion: config.concierge.pinniped.dev/v1alpha1
kind: CredentialIssuer
metadata:
  name: pinniped-concierge-config
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: pinniped-concierge-config
data:
  pinniped.yaml: |
    apiGroupSuffix: pinniped.dev
  apiVersion: login.concierge.pinniped.dev/v1alpha1
`

func TestRewriteManifest(t *testing.T) {
	t.Parallel()
	got, err := RewriteManifest([]byte(manifest), "tuna.io")
	if err != nil {
		t.Fatal(err)
	}
	out := string(got)
	for _, want := range []string{
		"# CRDs for the Concierge.",
		"  name: jwtauthenticators.authentication.concierge.tuna.io\n",
		"  group: authentication.concierge.tuna.io # the group\n",
		"  name: v1alpha1.login.concierge.tuna.io\n",
		"  group: login.concierge.tuna.io\n",
		"    app: login.concierge.pinniped.dev\n", // labels are user data
		"  - apiGroups: [login.concierge.tuna.io, identity.concierge.tuna.io]\n",
		"apiVersion: config.concierge.tuna.io/v1alpha1\nkind: CredentialIssuer\n",
		"    apiGroupSuffix: pinniped.dev\n", // ConfigMap data is user data
		"  apiVersion: login.concierge.pinniped.dev/v1alpha1\n",
		"  groupPriorityMinimum: 9900\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n---\n"); n != 4 {
		t.Errorf("output has %d document separators, want 4:\n%s", n, out)
	}
}

func TestRewriteManifestDefaultSuffix(t *testing.T) {
	t.Parallel()
	got, err := RewriteManifest([]byte(manifest), Default)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != manifest {
		t.Errorf("default suffix changed the manifest")
	}
}

func TestRewriteManifestErrors(t *testing.T) {
	t.Parallel()
	if _, err := RewriteManifest([]byte(manifest), "tuna"); err == nil || !strings.Contains(err.Error(), "invalid API group suffix") {
		t.Errorf("invalid suffix: err = %v", err)
	}
	if _, err := RewriteManifest([]byte("a: b\n---\nkey: [unclosed\n"), "tuna.io"); err == nil || !strings.Contains(err.Error(), "YAML document 2") {
		t.Errorf("invalid YAML: err = %v", err)
	}
}
