package groupsuffix

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestRewriteJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string // "" means the document must come back byte for byte
	}{
		{
			name: "object with apiVersion, apiGroup and a token that looks like a group",
			in: `{"apiVersion":"login.concierge.pinniped.dev/v1alpha1","kind":"TokenCredentialRequest",
				"spec":{"token":"login.concierge.pinniped.dev","authenticator":{"apiGroup":"authentication.concierge.pinniped.dev","kind":"JWTAuthenticator","name":"a"}}}`,
			want: `{"apiVersion":"login.concierge.tuna.io/v1alpha1","kind":"TokenCredentialRequest",
				"spec":{"token":"login.concierge.pinniped.dev","authenticator":{"apiGroup":"authentication.concierge.tuna.io","kind":"JWTAuthenticator","name":"a"}}}`,
		},
		{
			name: "core object with owner references, large integers and user data",
			in: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","generation":9007199254740993,
				"labels":{"group":"idp.supervisor.pinniped.dev"},
				"annotations":{"apiVersion":"idp.supervisor.pinniped.dev/v1alpha1"},
				"ownerReferences":[{"apiVersion":"config.supervisor.pinniped.dev/v1alpha1","kind":"FederationDomain","name":"fd","uid":"u"},
					{"apiVersion":"apps/v1","kind":"Deployment","name":"d","uid":"v"}]},
				"data":{"apiVersion":"config.supervisor.pinniped.dev/v1alpha1"}}`,
			want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","generation":9007199254740993,
				"labels":{"group":"idp.supervisor.pinniped.dev"},
				"annotations":{"apiVersion":"idp.supervisor.pinniped.dev/v1alpha1"},
				"ownerReferences":[{"apiVersion":"config.supervisor.tuna.io/v1alpha1","kind":"FederationDomain","name":"fd","uid":"u"},
					{"apiVersion":"apps/v1","kind":"Deployment","name":"d","uid":"v"}]},
				"data":{"apiVersion":"config.supervisor.pinniped.dev/v1alpha1"}}`,
		},
		{
			name: "list items",
			in: `{"apiVersion":"authentication.concierge.pinniped.dev/v1alpha1","kind":"JWTAuthenticatorList","items":[
				{"apiVersion":"authentication.concierge.pinniped.dev/v1alpha1","kind":"JWTAuthenticator","metadata":{"name":"a"}}]}`,
			want: `{"apiVersion":"authentication.concierge.tuna.io/v1alpha1","kind":"JWTAuthenticatorList","items":[
				{"apiVersion":"authentication.concierge.tuna.io/v1alpha1","kind":"JWTAuthenticator","metadata":{"name":"a"}}]}`,
		},
		{
			name: "RBAC rules",
			in: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","rules":[
				{"apiGroups":["","login.concierge.pinniped.dev","apps"],"resources":["tokencredentialrequests"],"verbs":["create"]}]}`,
			want: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","rules":[
				{"apiGroups":["","login.concierge.tuna.io","apps"],"resources":["tokencredentialrequests"],"verbs":["create"]}]}`,
		},
		{
			name: "legacy discovery group list",
			in: `{"kind":"APIGroupList","apiVersion":"v1","groups":[
				{"name":"login.concierge.pinniped.dev","versions":[{"groupVersion":"login.concierge.pinniped.dev/v1alpha1","version":"v1alpha1"}],
				 "preferredVersion":{"groupVersion":"login.concierge.pinniped.dev/v1alpha1","version":"v1alpha1"}},
				{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}]}]}`,
			want: `{"kind":"APIGroupList","apiVersion":"v1","groups":[
				{"name":"login.concierge.tuna.io","versions":[{"groupVersion":"login.concierge.tuna.io/v1alpha1","version":"v1alpha1"}],
				 "preferredVersion":{"groupVersion":"login.concierge.tuna.io/v1alpha1","version":"v1alpha1"}},
				{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}]}]}`,
		},
		{
			name: "legacy discovery group",
			in:   `{"kind":"APIGroup","apiVersion":"v1","name":"idp.supervisor.pinniped.dev","versions":[{"groupVersion":"idp.supervisor.pinniped.dev/v1alpha1","version":"v1alpha1"}]}`,
			want: `{"kind":"APIGroup","apiVersion":"v1","name":"idp.supervisor.tuna.io","versions":[{"groupVersion":"idp.supervisor.tuna.io/v1alpha1","version":"v1alpha1"}]}`,
		},
		{
			name: "aggregated discovery",
			in: `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":[{"metadata":{"name":"identity.concierge.pinniped.dev"},
				"versions":[{"version":"v1alpha1","resources":[{"resource":"whoamirequests","responseKind":{"group":"identity.concierge.pinniped.dev","version":"v1alpha1","kind":"WhoAmIRequest"}}]}]}]}`,
			want: `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":[{"metadata":{"name":"identity.concierge.tuna.io"},
				"versions":[{"version":"v1alpha1","resources":[{"resource":"whoamirequests","responseKind":{"group":"identity.concierge.tuna.io","version":"v1alpha1","kind":"WhoAmIRequest"}}]}]}]}`,
		},
		{
			name: "status error details",
			in:   `{"kind":"Status","apiVersion":"v1","status":"Failure","details":{"group":"config.concierge.pinniped.dev","kind":"credentialissuers"}}`,
			want: `{"kind":"Status","apiVersion":"v1","status":"Failure","details":{"group":"config.concierge.tuna.io","kind":"credentialissuers"}}`,
		},
		{
			name: "no group of ours: untouched",
			in:   `{"apiVersion":"apps/v1",   "kind":"Deployment"}`,
		},
		{
			name: "mentions the suffix only in user data",
			in:   `{"apiVersion":"v1","kind":"Secret","data":{"x":"eA=="},"metadata":{"name":"pinniped.dev"}}`,
			want: `{"apiVersion":"v1","kind":"Secret","data":{"x":"eA=="},"metadata":{"name":"pinniped.dev"}}`,
		},
	}
	r := newReplacer("tuna.io")
	u := newUnreplacer("tuna.io")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.rewriteJSON([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if string(got) != tt.in {
					t.Fatalf("document was re-encoded: %s", got)
				}
				return
			}
			assertSameJSON(t, got, tt.want)
			if strings.Contains(tt.in, "9007199254740993") && !strings.Contains(string(got), "9007199254740993") {
				t.Fatalf("integer lost precision: %s", got)
			}
			back, err := u.rewriteJSON(got)
			if err != nil {
				t.Fatal(err)
			}
			assertSameJSON(t, back, tt.in)
		})
	}
}

func TestRewriteJSONErrors(t *testing.T) {
	t.Parallel()
	r := newReplacer("tuna.io")
	for _, in := range []string{`{"apiVersion":"login.concierge.pinniped.dev/v1alpha1"`, `{"a":"x.pinniped.dev"} {}`} {
		if _, err := r.rewriteJSON([]byte(in)); err == nil {
			t.Errorf("rewriteJSON(%s) succeeded, want an error", in)
		}
	}
}

func TestRewriteJSONPatch(t *testing.T) {
	t.Parallel()
	in := `[{"op":"replace","path":"/spec/authenticator/apiGroup","value":"authentication.concierge.pinniped.dev"},
		{"op":"add","path":"/rules/0/apiGroups/-","value":"login.concierge.pinniped.dev"},
		{"op":"replace","path":"/spec/token","value":"login.concierge.pinniped.dev"},
		{"op":"add","path":"/metadata/ownerReferences/-","value":{"apiVersion":"idp.supervisor.pinniped.dev/v1alpha1","kind":"OIDCIdentityProvider"}}]`
	want := `[{"op":"replace","path":"/spec/authenticator/apiGroup","value":"authentication.concierge.tuna.io"},
		{"op":"add","path":"/rules/0/apiGroups/-","value":"login.concierge.tuna.io"},
		{"op":"replace","path":"/spec/token","value":"login.concierge.pinniped.dev"},
		{"op":"add","path":"/metadata/ownerReferences/-","value":{"apiVersion":"idp.supervisor.tuna.io/v1alpha1","kind":"OIDCIdentityProvider"}}]`
	got, err := newReplacer("tuna.io").rewriteJSONPatch([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, got, want)
}

func TestJSONAccept(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"application/json": "application/json",
		"application/vnd.kubernetes.protobuf,application/json": "application/json",
		"application/vnd.kubernetes.protobuf, */*":             "application/json,*/*",
		"application/cbor": "application/json",
		"application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
	}
	for in, want := range tests {
		if got := jsonAccept(in); got != want {
			t.Errorf("jsonAccept(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsWatch(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"/apis/login.concierge.tuna.io/v1alpha1/tokencredentialrequests":                false,
		"/apis/authentication.concierge.tuna.io/v1alpha1/jwtauthenticators?watch=true":  true,
		"/apis/authentication.concierge.tuna.io/v1alpha1/jwtauthenticators?watch=1":     true,
		"/apis/authentication.concierge.tuna.io/v1alpha1/jwtauthenticators?watch=false": false,
		"/apis/apps/v1/watch/deployments":                                               true,
		"/api/v1/watch/namespaces/x/pods":                                               true,
		"/prefix/api/v1/namespaces/watch":                                               false,
		"/api/v1/namespaces/x/secrets/watch":                                            false,
	}
	for target, want := range tests {
		req, err := http.NewRequest(http.MethodGet, "https://example.com"+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := isWatch(req); got != want {
			t.Errorf("isWatch(%s) = %v, want %v", target, got, want)
		}
	}
}

func assertSameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("result is not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("expectation is not JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
