package kubeversions

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// servedHere is which releases of proxyList the proxy served in full when this was written.
var servedHere = map[string]bool{"v1.31.0": true, "v1.32.2": true, "v1.33.6": true, "v1.33.13": true}

func TestServedFallsBackPatchByPatch(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var checked []string
	checkErr := error(nil)
	r := Resolver{
		VerdictFile: filepath.Join(t.TempDir(), "served.json"),
		MaxAge:      24 * time.Hour,
		Now:         func() time.Time { return now },
		Check: func(_ context.Context, release string) (string, error) {
			checked = append(checked, release)
			if checkErr != nil {
				return "", checkErr
			}
			if servedHere[release] {
				return "", nil
			}
			return "the Go module proxy does not serve k8s.io/endpointslice@v0" + strings.TrimPrefix(release, "v1") + ": 403 Forbidden", nil
		},
	}
	ctx := context.Background()
	versions := Newest(proxyList, 6)
	got, warn := r.Served(ctx, versions[0]) // 1.31: v1.31.14 refused, v1.31.0 served
	if warn != "" || got.Release != "v1.31.0" || got.Unserved != "" {
		t.Fatalf("1.31: %+v %q", got, warn)
	}
	if want := []Refusal{{"v1.31.14", "the Go module proxy does not serve k8s.io/endpointslice@v0.31.14: 403 Forbidden"}}; !reflect.DeepEqual(got.Passed, want) {
		t.Errorf("passed over: %+v", got.Passed)
	}
	if got, _ := r.Served(ctx, versions[2]); got.Release != "v1.33.13" || len(got.Passed) != 0 {
		t.Errorf("1.33's newest is served: %+v", got)
	}
	// 1.34: no patch is served: the newest stays, with why.
	got, _ = r.Served(ctx, versions[3])
	if got.Release != "v1.34.4" || len(got.Passed) != 0 ||
		got.Unserved != "the Go module proxy serves no patch of Kubernetes 1.34 in full (v1.34.4: the Go module proxy does not serve k8s.io/endpointslice@v0.34.4: 403 Forbidden; 3 older patch(es) refused too)" {
		t.Errorf("1.34: %+v", got)
	}
	if want := []string{"v1.31.14", "v1.31.0", "v1.33.13", "v1.34.4", "v1.34.3", "v1.34.2", "v1.34.0"}; !reflect.DeepEqual(checked, want) {
		t.Fatalf("checked %v, want %v", checked, want)
	}

	// Within a day nothing is asked again; after it, only refusals are.
	checked = nil
	for _, v := range []Version{versions[0], versions[2], versions[3]} {
		r.Served(ctx, v)
	}
	if len(checked) != 0 {
		t.Errorf("cached verdicts asked again: %v", checked)
	}
	now = now.Add(25 * time.Hour)
	r.Served(ctx, versions[0])
	r.Served(ctx, versions[2])
	if want := []string{"v1.31.14"}; !reflect.DeepEqual(checked, want) {
		t.Errorf("after a day checked %v, want %v (served verdicts are kept)", checked, want)
	}

	// A proxy that does not answer leaves the version as it was, with a warning.
	checkErr = errors.New("dial tcp: no route to host")
	now = now.Add(25 * time.Hour)
	got, warn = r.Served(ctx, versions[1])
	if got.Release != "v1.32.13" || !strings.Contains(warn, "no route to host") {
		t.Errorf("unanswered check: %+v %q", got, warn)
	}
}

func TestStagingModules(t *testing.T) {
	t.Parallel()
	gomod := []byte(`module k8s.io/kubernetes

go 1.24.0

require (
	github.com/spf13/cobra v1.9.1
	k8s.io/api v0.0.0
	k8s.io/endpointslice v0.0.0
	k8s.io/sample-apiserver v0.0.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/endpointslice => ./staging/src/k8s.io/endpointslice
	k8s.io/sample-apiserver => ./staging/src/k8s.io/sample-apiserver
	k8s.io/sample-controller => ./staging/src/k8s.io/sample-controller
)
`)
	got, err := StagingModules(gomod, "v1.32.2")
	want := []string{"k8s.io/api@v0.32.2", "k8s.io/endpointslice@v0.32.2"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("StagingModules = %v, %v; want %v (staged, without the examples)", got, err, want)
	}
	if _, err := StagingModules([]byte("module k8s.io/kubernetes\n"), "v1.32.2"); err == nil {
		t.Error("a go.mod without staging modules should be an error")
	}
}

func TestRefusalOr(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ msg, refusal, err string }{
		{"k8s.io/endpointslice@v0.31.14: reading https://proxy.golang.org/k8s.io/endpointslice/@v/v0.31.14.info: 403 Forbidden\n\tserver response: This module version is not available.",
			"the Go module proxy does not serve k8s.io/endpointslice@v0.31.14: 403 Forbidden", ""},
		{"k8s.io/sample-controller@v0.32.2: verifying go.mod: k8s.io/sample-controller@v0.32.2/go.mod: reading https://proxy.golang.org/sumdb/sum.golang.org/lookup/k8s.io/sample-controller@v0.32.2: 404 Not Found",
			"the Go module proxy does not have a checksum for k8s.io/sample-controller@v0.32.2: 404 Not Found", ""},
		{"k8s.io/api@v0.33.13: Get \"https://proxy.golang.org/k8s.io/api/@v/v0.33.13.info\": dial tcp: lookup proxy.golang.org: no such host",
			"", "no such host"},
	} {
		refusal, err := refusalOr(c.msg)
		if refusal != c.refusal || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("refusalOr(%q) = %q, %v; want %q, error containing %q", c.msg, refusal, err, c.refusal, c.err)
		}
	}
}
