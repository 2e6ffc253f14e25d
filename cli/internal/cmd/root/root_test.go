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

// --help succeeds everywhere; an unknown subcommand fails and names the closest, at the root as
// under a group; a group alone prints its help.
func TestUsageManners(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		wantErr []string
		wantOut string
	}{
		{args: []string{"--help"}, wantOut: "Available Commands:"},
		{args: []string{"get", "--help"}, wantOut: "kubeconfig"},
		{args: []string{"login", "oidc", "--help"}, wantOut: "--issuer"},
		{args: []string{"login"}, wantOut: "Available Commands:"},
		{args: []string{"logn"}, wantErr: []string{`unknown command "logn" for "pinniped"`, "Did you mean this?\n\tlogin"}},
		{args: []string{"get", "kubecnfig"}, wantErr: []string{`unknown command "kubecnfig" for "pinniped get"`, "Did you mean this?\n\tkubeconfig", "Run 'pinniped get --help' for usage."}},
		{args: []string{"login", "odic"}, wantErr: []string{`unknown command "odic" for "pinniped login"`, "\toidc"}},
		{args: []string{"login", "frobnicate"}, wantErr: []string{`unknown command "frobnicate" for "pinniped login"`}},
	} {
		t.Run(strings.Join(tt.args, "_"), func(t *testing.T) {
			var out bytes.Buffer
			cmd := NewCommand(deps.Deps{Out: &out, ErrOut: &out})
			cmd.SetArgs(tt.args)
			err := cmd.Execute()
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Execute = %v, want success", err)
				}
				if !strings.Contains(out.String(), tt.wantOut) {
					t.Errorf("output lacks %q:\n%s", tt.wantOut, out.String())
				}
				return
			}
			if err == nil {
				t.Fatalf("Execute succeeded, want an error; output:\n%s", out.String())
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}
