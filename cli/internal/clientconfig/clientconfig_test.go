package clientconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const twoContexts = `apiVersion: v1
kind: Config
contexts:
- name: b
  context: {cluster: k, user: u}
- name: a
  context: {cluster: missing, user: u}
clusters:
- name: k
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: t}
`

// Each refusal names the kubeconfig read and what the user can do about it.
func TestLoadErrorsSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	two := write("two", twoContexts)
	empty := write("empty", "apiVersion: v1\nkind: Config\n")
	missing := filepath.Join(dir, "missing")
	for _, tt := range []struct {
		name, path, context string
		want                []string
	}{
		{name: "missing file", path: missing, want: []string{"loading the kubeconfig " + missing, "no such file", "pass --kubeconfig, or set $KUBECONFIG"}},
		{name: "no contexts", path: empty, want: []string{"no kubeconfig context found in " + empty, "pass --kubeconfig"}},
		{name: "no current context", path: two, want: []string{"the kubeconfig " + two + " has no current context", `choose one of "a", "b" with --kubeconfig-context`}},
		{name: "unknown context", path: two, context: "c", want: []string{`has no context "c": it has "a", "b"`}},
		{name: "undefined cluster", path: two, context: "a", want: []string{`context "a" names cluster "missing", which the kubeconfig ` + two + " does not define"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			loaded, err := Load(tt.path, tt.context)
			if err == nil {
				t.Fatalf("Load = %+v, want an error", loaded)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	loaded, err := Load(two, "b")
	if err != nil || loaded.Cluster.Server != "https://127.0.0.1:6443" {
		t.Fatalf("Load(b) = %+v, %v", loaded, err)
	}
}
