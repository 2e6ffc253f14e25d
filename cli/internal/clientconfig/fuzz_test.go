package clientconfig

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad loads kubeconfig files of arbitrary bytes, as `pinniped get kubeconfig` and `whoami`
// read the user's. The answer is a clear error, or the selected context with its cluster and a
// client config: never a panic, never half a result.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\nclusters:\n- name: k\n  cluster: {server: \"https://127.0.0.1:6443\"}\nusers:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: pinniped\n      args: [login, static, --token=x]\n      interactiveMode: Never\n",
		"apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: missing, user: u}\n",
		"apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\nclusters:\n- name: k\n  cluster: {server: \"https://h\", certificate-authority-data: bm90IGEgY2VydA==}\n",
		"apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\nclusters:\n- name: k\n  cluster: {server: \"::bad\"}\nusers:\n- name: u\n  user: {exec: {command: \"\", args: null, env: [{name: \"\"}]}}\n",
		"apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: null\n",
		"kind: Pod", "", "{", "- a", "&a [*a, *a]", "\x00\xff",
	} {
		f.Add([]byte(seed))
	}
	path := filepath.Join(f.TempDir(), "kubeconfig")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		loaded, err := Load(path, "")
		if err != nil {
			if loaded != nil {
				t.Fatalf("an error came with a result: %v", err)
			}
			return
		}
		if loaded.Context == nil || loaded.Cluster == nil || loaded.REST == nil || loaded.Raw == nil || loaded.ContextName == "" {
			t.Fatalf("half a result: %+v", loaded)
		}
	})
}
