package completion

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"sealion.dev/cli/internal/deps"
)

func TestCommand(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{args: []string{"bash"}, want: "__pinniped_"},
		{args: []string{"zsh"}, want: "#compdef pinniped"},
		{args: []string{"fish"}, want: "complete -c pinniped"},
		{args: []string{"powershell"}, want: "Register-ArgumentCompleter"},
		{args: []string{"tcsh"}, wantErr: `invalid argument "tcsh"`},
		{args: nil, wantErr: "accepts 1 arg(s)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			root := &cobra.Command{Use: "pinniped"}
			root.AddCommand(NewCommand(deps.Deps{Out: &out}))
			root.SetArgs(append([]string{"completion"}, tt.args...))
			root.SetOut(&out)
			root.SetErr(&out)
			err := root.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !strings.Contains(out.String(), tt.want) {
				t.Fatalf("err = %v; output lacks %q", err, tt.want)
			}
		})
	}
}
