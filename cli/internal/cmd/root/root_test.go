package root

import (
	"bytes"
	"strings"
	"testing"

	"sealion.dev/cli/internal/deps"
)

func TestCommandTree(t *testing.T) {
	var out bytes.Buffer
	cmd := NewCommand(deps.Deps{Out: &out, ErrOut: &out})
	for _, path := range [][]string{{"get", "kubeconfig"}, {"login", "oidc"}, {"login", "static"}, {"whoami"}, {"version"}, {"completion"}} {
		found, _, err := cmd.Find(path)
		if err != nil || found.Name() != path[len(path)-1] {
			t.Errorf("command %q not found: %v", strings.Join(path, " "), err)
		}
	}
	cmd.SetArgs([]string{"completion", "bash"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	// The script completes the whole tree, so it names the root command.
	if !strings.Contains(out.String(), "__start_pinniped") {
		t.Error("the completion script does not complete pinniped")
	}
}
