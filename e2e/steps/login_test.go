package steps

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sealion.dev/providers"
)

// The fixtures run in the cluster where the cluster is not on this machine, or when asked.
func TestFixturesInCluster(t *testing.T) {
	for _, tt := range []struct {
		changesHost bool
		env         string
		want        bool
	}{
		{changesHost: true, want: false},
		{changesHost: true, env: "true", want: true},
		{changesHost: false, want: true},
		{changesHost: false, env: "false", want: true},
	} {
		t.Setenv(FixturesInClusterEnv, tt.env)
		if got := FixturesInCluster(providers.Info{Capabilities: providers.Capabilities{ChangesHost: tt.changesHost}}); got != tt.want {
			t.Errorf("ChangesHost %v, $%s=%q: in the cluster %v, want %v", tt.changesHost, FixturesInClusterEnv, tt.env, got, tt.want)
		}
	}
}

// Through the tunnel proxy go requests for servers in the cluster only: the cluster and the Concierge's endpoints stay
// direct, or kubectl and the plugin would ask the proxy, which refuses them, for them.
func TestProxyClientEnv(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://203.0.113.7:6443"}
- name: d
  cluster: {server: "https://api.cloud.example:443"}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user: {token: t}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := proxyClientEnv("http://127.0.0.1:40000", kubeconfig, []string{"198.51.100.9", "proxy.cloud.example:8443", "https://203.0.113.7"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"HTTPS_PROXY=http://127.0.0.1:40000", "NO_PROXY=203.0.113.7,api.cloud.example,198.51.100.9,proxy.cloud.example"}
	if !slices.Equal(got, want) {
		t.Errorf("env %q, want %q", got, want)
	}
	if got, err := ProxyClientEnv(t.Context(), "", kubeconfig); got != nil || err != nil {
		t.Errorf("without a proxy: %q, %v; want nothing", got, err)
	}
	if _, err := proxyClientEnv("http://127.0.0.1:40000", filepath.Join(t.TempDir(), "missing"), nil); err == nil {
		t.Error("a missing kubeconfig gave no error")
	}
	if _, err := proxyClientEnv("http://127.0.0.1:40000", kubeconfig, []string{"https://"}); err == nil {
		t.Error("an endpoint without a host gave no error")
	}
}
