package version

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/yaml"
)

var stamped = apimachineryversion.Info{GitVersion: "v1.2.3", GitCommit: "abc123", GitTreeState: "clean", BuildDate: "2026-11-27T10:00:00Z",
	GoVersion: "go1.26", Compiler: "gc", Platform: "linux/amd64"}

func TestRun(t *testing.T) {
	wantFields := map[string]string{"gitVersion": "v1.2.3", "gitCommit": "abc123", "buildDate": "2026-11-27T10:00:00Z",
		"goVersion": "go1.26", "compiler": "gc", "platform": "linux/amd64"}
	// decode turns each output back into its fields.
	tests := []struct {
		output string
		decode func(t *testing.T, out []byte) map[string]string
	}{
		{output: "", decode: func(t *testing.T, out []byte) map[string]string {
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
				k, v, ok := strings.Cut(line, ":")
				if !ok {
					t.Fatalf("line %q is not \"field: value\"", line)
				}
				got[k] = strings.TrimSpace(v)
			}
			return got
		}},
		{output: "json", decode: func(t *testing.T, out []byte) map[string]string {
			got := map[string]string{}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			return got
		}},
		{output: "yaml", decode: func(t *testing.T, out []byte) map[string]string {
			got := map[string]string{}
			if err := yaml.UnmarshalStrict(out, &got); err != nil {
				t.Fatal(err)
			}
			return got
		}},
	}
	for _, tt := range tests {
		t.Run("output="+tt.output, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(&out, stamped, flags{output: tt.output}); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out.String(), "Info{") {
				t.Errorf("output is a Go struct dump:\n%s", out.String())
			}
			got := tt.decode(t, out.Bytes())
			for k, v := range wantFields {
				if got[k] != v {
					t.Errorf("%s = %q, want %q in:\n%s", k, got[k], v, out.String())
				}
			}
		})
	}
	if err := run(&bytes.Buffer{}, stamped, flags{output: "xml"}); err == nil || !strings.Contains(err.Error(), `invalid output format "xml"`) {
		t.Errorf("err = %v", err)
	}
}

func TestWithBuildInfo(t *testing.T) {
	unstamped := apimachineryversion.Info{GitVersion: "v0.0.0-master+$Format:%H$", GitCommit: "$Format:%H$", BuildDate: unstampedBuildDate, GoVersion: "go1.26"}
	fromGit := &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261127100000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}
	tests := []struct {
		name string
		info apimachineryversion.Info
		bi   *debug.BuildInfo
		want apimachineryversion.Info
	}{
		{name: "stamped by -ldflags", info: stamped, bi: fromGit, want: stamped},
		{name: "built from a checkout", info: unstamped, bi: fromGit, want: apimachineryversion.Info{
			GitVersion: "v0.0.0-20261127100000-0123456789ab+dirty", GitCommit: "0123456789abcdef", GitTreeState: "dirty", BuildDate: "unknown", GoVersion: "go1.26"}},
		{name: "nothing known", info: unstamped, bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, want: apimachineryversion.Info{
			GitVersion: "v0.0.0-dev", GitCommit: "unknown", BuildDate: "unknown", GoVersion: "go1.26"}},
		{name: "no build info", info: unstamped, want: apimachineryversion.Info{
			GitVersion: "v0.0.0-dev", GitCommit: "unknown", BuildDate: "unknown", GoVersion: "go1.26"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := withBuildInfo(tt.info, tt.bi); got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
