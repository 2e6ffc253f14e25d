package serverboot

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
)

// TestKubeClientsAreNotThrottled: a client built from KubeRESTConfig has no client-side rate
// limiter, so a server's writes for its users (a login's session Secrets, each authenticator's
// status) are not held at client-go's default of 5 a second.
func TestKubeClientsAreNotThrottled(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	config, err := KubeRESTConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	if limiter := client.CoreV1().RESTClient().GetRateLimiter(); limiter != nil {
		t.Errorf("the client is rate limited at %v requests a second", limiter.QPS())
	}
}
