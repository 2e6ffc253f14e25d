// Package version implements "pinniped version". The values come from
// k8s.io/component-base/version, which `make build` stamps with -ldflags -X; a build without them
// shows what the Go toolchain recorded of the checkout instead of component-base's placeholders.
package version

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/component-base/version"
	"sigs.k8s.io/yaml"

	"sealion.dev/cli/internal/deps"
)

// Shown for what neither -ldflags nor the toolchain's build information tell.
const (
	devVersion = "v0.0.0-dev"
	unknown    = "unknown"
)

// unstampedBuildDate is component-base's placeholder when -ldflags sets no build date.
const unstampedBuildDate = "1970-01-01T00:00:00Z"

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
			bi, _ := debug.ReadBuildInfo()
			return run(d.Out, withBuildInfo(version.Get(), bi), f)
		},
	}
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "one of 'yaml' or 'json' (default: text)")
	return cmd
}

// withBuildInfo replaces the placeholders of an unstamped build: the version by the main module's
// (which the toolchain derives from the checkout), the commit and tree state by the VCS revision
// and modified flag it records, and whatever is still unknown by devVersion or unknown.
func withBuildInfo(info apimachineryversion.Info, bi *debug.BuildInfo) apimachineryversion.Info {
	vcs := map[string]string{}
	mainVersion := ""
	if bi != nil {
		for _, s := range bi.Settings {
			vcs[s.Key] = s.Value
		}
		if v := bi.Main.Version; strings.HasPrefix(v, "v") {
			mainVersion = v
		}
	}
	if strings.Contains(info.GitVersion, "$Format") || info.GitVersion == "" {
		info.GitVersion = devVersion
		if mainVersion != "" {
			info.GitVersion = mainVersion
		}
	}
	if strings.Contains(info.GitCommit, "$Format") || info.GitCommit == "" {
		info.GitCommit = unknown
		if rev := vcs["vcs.revision"]; rev != "" {
			info.GitCommit = rev
		}
	}
	if info.GitTreeState == "" {
		switch vcs["vcs.modified"] {
		case "true":
			info.GitTreeState = "dirty"
		case "false":
			info.GitTreeState = "clean"
		}
	}
	if info.BuildDate == unstampedBuildDate || info.BuildDate == "" {
		info.BuildDate = unknown
	}
	return info
}

func run(w io.Writer, info apimachineryversion.Info, f flags) error {
	switch f.output {
	case "":
		return writeText(w, info)
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
	return fmt.Errorf("invalid output format %q: must be yaml or json (or not given, for text)", f.output)
}

// writeText prints one aligned "field: value" line per field, named as in the JSON output.
func writeText(w io.Writer, info apimachineryversion.Info) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for _, field := range [][2]string{
		{"gitVersion", info.GitVersion},
		{"gitCommit", info.GitCommit},
		{"gitTreeState", info.GitTreeState},
		{"buildDate", info.BuildDate},
		{"goVersion", info.GoVersion},
		{"compiler", info.Compiler},
		{"platform", info.Platform},
	} {
		if field[1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", field[0], field[1])
		}
	}
	return tw.Flush()
}
