package integration

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDiscoveryAsUpstream compares what kubectl api-resources and kubectl get pinniped read, through
// the real aggregation layer, with upstream Pinniped's discovery for the Concierge's groups: each
// resource's kind, scope, verbs, short names (none), categories, and singular name.
func TestDiscoveryAsUpstream(t *testing.T) {
	crdVerbs := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	statusVerbs := []string{"get", "patch", "update"}
	authenticatorCategories := []string{"pinniped", "pinniped-authenticator", "pinniped-authenticators"}
	type resource struct {
		kind       string
		verbs      []string
		categories []string
	}
	want := map[string]map[string]resource{
		"login.concierge.pinniped.dev/v1alpha1": {
			"tokencredentialrequests": {"TokenCredentialRequest", []string{"create", "list"}, []string{"pinniped"}},
		},
		"identity.concierge.pinniped.dev/v1alpha1": {
			"whoamirequests": {"WhoAmIRequest", []string{"create", "list"}, []string{"pinniped"}},
		},
		"authentication.concierge.pinniped.dev/v1alpha1": {
			"jwtauthenticators":            {"JWTAuthenticator", crdVerbs, authenticatorCategories},
			"jwtauthenticators/status":     {"JWTAuthenticator", statusVerbs, nil},
			"webhookauthenticators":        {"WebhookAuthenticator", crdVerbs, authenticatorCategories},
			"webhookauthenticators/status": {"WebhookAuthenticator", statusVerbs, nil},
		},
		"config.concierge.pinniped.dev/v1alpha1": {
			"credentialissuers":        {"CredentialIssuer", crdVerbs, []string{"pinniped"}},
			"credentialissuers/status": {"CredentialIssuer", statusVerbs, nil},
		},
	}
	for gv, resources := range want {
		list, err := env.kube.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Errorf("%s: %v", gv, err)
			continue
		}
		got := map[string]metav1.APIResource{}
		for _, r := range list.APIResources {
			got[r.Name] = r
		}
		if len(got) != len(resources) {
			t.Errorf("%s serves %d resources, want %d: %v", gv, len(got), len(resources), list.APIResources)
		}
		for name, w := range resources {
			r, ok := got[name]
			if !ok {
				t.Errorf("%s: no %s", gv, name)
				continue
			}
			verbs := slices.Sorted(slices.Values(r.Verbs))
			singular := strings.ToLower(w.kind) // the lowercase kind, and none for a subresource
			if strings.HasSuffix(name, "/status") {
				singular = ""
			}
			if r.Kind != w.kind || r.Namespaced || !slices.Equal(verbs, w.verbs) || len(r.ShortNames) != 0 ||
				!slices.Equal(r.Categories, w.categories) || r.SingularName != singular {
				t.Errorf("%s %s: kind %s namespaced %v verbs %v shortNames %v categories %v singular %q;\nwant kind %s cluster-scoped verbs %v no short names categories %v singular %q",
					gv, name, r.Kind, r.Namespaced, verbs, r.ShortNames, r.Categories, r.SingularName, w.kind, w.verbs, w.categories, singular)
			}
		}
	}
}
