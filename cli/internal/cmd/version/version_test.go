package version

import (
	"bytes"
	"strings"
	"testing"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

func TestRun(t *testing.T) {
	info := apimachineryversion.Info{GitVersion: "v1.2.3", GitCommit: "abc", GoVersion: "go1.26", Platform: "linux/amd64"}
	tests := []struct {
		output  string
		want    []string
		wantErr bool
	}{
		{output: "", want: []string{`GitVersion:"v1.2.3"`, `GitCommit:"abc"`}},
		{output: "json", want: []string{`"gitVersion": "v1.2.3"`, `"platform": "linux/amd64"`}},
		{output: "yaml", want: []string{"gitVersion: v1.2.3", "goVersion: go1.26"}},
		{output: "xml", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.output, func(t *testing.T) {
			var out bytes.Buffer
			err := run(&out, info, flags{output: tt.output})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output %q lacks %q", out.String(), w)
				}
			}
		})
	}
}
