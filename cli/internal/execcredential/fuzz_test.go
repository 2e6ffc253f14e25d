package execcredential

import (
	"testing"

	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	clientauthv1beta1 "k8s.io/client-go/pkg/apis/clientauthentication/v1beta1"

	"sealion.dev/cli/pkg/credentialcache"
)

// FuzzReadInfo parses arbitrary KUBERNETES_EXEC_INFO values, as kubectl builds them from the
// kubeconfig (the cluster, and the exec plugin's free-form config). The answer is a clear error,
// or a supported version with cluster info that keys the credential cache.
func FuzzReadInfo(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}`,
		`{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","spec":{"cluster":{"server":"https://c","certificate-authority-data":"YQ==","config":{"a":[1,{"b":null}]}}}}`,
		`{"apiVersion":"client.authentication.k8s.io/v1","spec":{"cluster":{"server":"https://c","insecure-skip-tls-verify":true,"proxy-url":"socks5://p","tls-server-name":"n","config":"x"}}}`,
		`{"apiVersion":"client.authentication.k8s.io/v1alpha1","kind":"ExecCredential"}`,
		`{"apiVersion":"client.authentication.k8s.io/v1","spec":{"cluster":{"certificate-authority-data":"not base64"}}}`,
		`{"apiVersion":"client.authentication.k8s.io/v1","spec":{"cluster":null}}`,
		`{"apiVersion":"client.authentication.k8s.io/v1","spec":{"cluster":{"config":1e999}}}`,
		"", "{", "null", "[]", "\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		info, err := ReadInfo(func(name string) string {
			if name == EnvVar {
				return raw
			}
			return ""
		})
		if err != nil {
			if info != nil {
				t.Fatalf("an error came with info %+v: %v", info, err)
			}
			return
		}
		if v := info.APIVersion; v != clientauthv1.SchemeGroupVersion.String() && v != clientauthv1beta1.SchemeGroupVersion.String() {
			t.Fatalf("accepted version %q", v)
		}
		if _, err := (credentialcache.Key{Args: []string{"login", "static"}, Cluster: info.Cluster}).Hash(); err != nil {
			t.Fatalf("accepted cluster info %+v cannot key the cache: %v", info.Cluster, err)
		}
	})
}
