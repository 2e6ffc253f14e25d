// Package version implements "pinniped version". The values come from
// k8s.io/component-base/version, which the build sets with -ldflags -X.
package version

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/component-base/version"
	"sigs.k8s.io/yaml"

	"sealion.dev/cli/internal/deps"
)

type flags struct{ output string }

// NewCommand returns the "version" command.
func NewCommand(d deps.Deps) *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:          "version",
		Short:        "Print the version of this Pinniped CLI",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(*cobra.Command, []string) error {
			return run(d.Out, version.Get(), f)
		},
	}
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "one of 'yaml' or 'json'")
	return cmd
}

func run(w io.Writer, info apimachineryversion.Info, f flags) error {
	switch f.output {
	case "":
		_, err := fmt.Fprintf(w, "%#v\n", info)
		return err
	case "json":
		data, err := json.MarshalIndent(info, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(data, '\n'))
		return err
	case "yaml":
		data, err := yaml.Marshal(info)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return fmt.Errorf("invalid output format %q: must be yaml or json", f.output)
}
