package kubeversions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
)

// A Kubernetes release builds from source only when the Go module proxy serves every module it
// needs, with checksums. The proxy used here refuses some module versions (often one staging
// module of a newest patch), so a minor runs at the newest patch that is served in full, and the
// patches passed over are reported with the module that was refused.

// Refusal is a patch passed over and the module the proxy refused for it.
type Refusal struct {
	Release string `json:"release"`
	Reason  string `json:"reason"`
}

// Check says why the proxy cannot serve release in full ("" when it can). An error means the
// question could not be answered (the proxy did not answer), not that the release is refused.
type Check func(ctx context.Context, release string) (refusal string, err error)

type verdict struct {
	Refusal string    `json:"refusal,omitempty"`
	Checked time.Time `json:"checked"`
}

// Served moves v to the newest patch of its minor that the proxy serves in full, recording the
// newer patches passed over. When none is served, v keeps its newest patch and Unserved says so.
// A warning (not an error) says when the proxy could not be asked: v is then returned as it was.
// Verdicts are cached in VerdictFile: a served release for good (module versions do not change),
// a refusal for MaxAge, since the proxy may serve it later.
func (r Resolver) Served(ctx context.Context, v Version) (Version, string) {
	check := r.Check
	if check == nil {
		check = goCheck
	}
	verdicts := r.readVerdicts()
	defer r.writeVerdicts(verdicts)
	out := Version{Minor: v.Minor, Release: v.Release, patches: v.patches}
	for _, release := range v.patchesNewestFirst() {
		got, cached := verdicts[release]
		if !cached || (got.Refusal != "" && r.now().Sub(got.Checked) >= r.MaxAge) {
			refusal, err := check(ctx, release)
			if err != nil {
				return v, fmt.Sprintf("could not check whether the Go module proxy serves Kubernetes %s in full (%v); trying it as it is", release, err)
			}
			got = verdict{Refusal: refusal, Checked: r.now()}
			verdicts[release] = got
		}
		if got.Refusal == "" {
			out.Release = release
			return out, ""
		}
		out.Passed = append(out.Passed, Refusal{Release: release, Reason: got.Refusal})
	}
	out.Unserved = fmt.Sprintf("the Go module proxy serves no patch of Kubernetes %s in full (%s)", v.Minor, summarize(out.Passed))
	out.Passed = nil
	return out, ""
}

// PassedOver says which newer patches of the minor were passed over and why, "" when none was:
// "runs v1.31.0; newer patches passed over: v1.31.14 (the Go module proxy does not serve ...)".
func (v Version) PassedOver() string {
	if len(v.Passed) == 0 {
		return ""
	}
	var passed []string
	for _, p := range v.Passed {
		passed = append(passed, p.Release+" ("+p.Reason+")")
	}
	return fmt.Sprintf("runs %s; newer patches passed over: %s", v.Release, strings.Join(passed, ", "))
}

// summarize names the first refusal and counts the others.
func summarize(passed []Refusal) string {
	if len(passed) == 0 {
		return "no release listed"
	}
	s := passed[0].Release + ": " + passed[0].Reason
	if n := len(passed) - 1; n > 0 {
		s += fmt.Sprintf("; %d older patch(es) refused too", n)
	}
	return s
}

func (r Resolver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r Resolver) readVerdicts() map[string]verdict {
	verdicts := map[string]verdict{}
	if raw, err := os.ReadFile(r.VerdictFile); err == nil {
		// A damaged file only costs the checks again.
		_ = json.Unmarshal(raw, &verdicts)
	}
	return verdicts
}

// writeVerdicts keeps the verdicts for the next run; failing to only costs the checks again.
func (r Resolver) writeVerdicts(verdicts map[string]verdict) {
	if r.VerdictFile == "" {
		return
	}
	raw, err := json.MarshalIndent(verdicts, "", "  ")
	if err != nil {
		return
	}
	if os.MkdirAll(filepath.Dir(r.VerdictFile), 0o755) != nil {
		return
	}
	tmp := r.VerdictFile + ".tmp"
	if os.WriteFile(tmp, raw, 0o644) == nil {
		_ = os.Rename(tmp, r.VerdictFile)
	}
}

// goCheck asks the proxy, through the go command (so GOPROXY, GONOSUMDB and the checksum
// database apply as for the build), for k8s.io/kubernetes at release and for every staging module
// it requires at the matching v0.MINOR.PATCH: the modules kubebuild pins. Other dependencies are
// pinned versions shared by every patch; kubebuild still names one if the proxy refuses it.
func goCheck(ctx context.Context, release string) (string, error) {
	main, err := download(ctx, Module+"@"+release)
	if err != nil {
		return "", err
	}
	if main.Error != "" {
		return refusalOr(main.Error)
	}
	gomod, err := os.ReadFile(main.GoMod)
	if err != nil {
		return "", err
	}
	staging, err := StagingModules(gomod, release)
	if err != nil {
		return "", err
	}
	results, err := download(ctx, staging...)
	if err != nil {
		return "", err
	}
	for _, m := range results.all {
		if m.Error != "" {
			return refusalOr(m.Error)
		}
	}
	return "", nil
}

// StagingModules lists, at release's v0.MINOR.PATCH, the staging modules that k8s.io/kubernetes'
// go.mod replaces by ./staging folders, except the examples (k8s.io/sample-apiserver and the
// like): no Kubernetes binary imports them, and the proxy often lacks them.
func StagingModules(gomod []byte, release string) ([]string, error) {
	f, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return nil, fmt.Errorf("parsing %s %s go.mod: %w", Module, release, err)
	}
	version := "v0" + strings.TrimPrefix(release, "v1")
	var out []string
	for _, r := range f.Replace {
		if strings.HasPrefix(r.New.Path, "./staging/") && !strings.HasPrefix(r.Old.Path, "k8s.io/sample-") {
			out = append(out, r.Old.Path+"@"+version)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s %s go.mod lists no staging module", Module, release)
	}
	return out, nil
}

type downloaded struct {
	GoMod, Error string
	all          []downloaded
}

// download runs `go mod download -json` for the modules; the first one's answer is returned, all
// of them in all. Per-module failures are in Error; err is for the go command itself.
func download(ctx context.Context, modules ...string) (downloaded, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"mod", "download", "-json"}, modules...)...)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOWORK=off", "GOFLAGS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out downloaded
	dec := json.NewDecoder(&stdout)
	for {
		var m downloaded
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return out, fmt.Errorf("reading go mod download output: %w", err)
		}
		out.all = append(out.all, m)
	}
	// The go command exits 1 when a module fails; that module's Error says why.
	if len(out.all) == 0 {
		if runErr != nil {
			return out, fmt.Errorf("go mod download %s: %w: %s", strings.Join(modules, " "), runErr, strings.TrimSpace(stderr.String()))
		}
		return out, errors.New("go mod download printed nothing")
	}
	out.GoMod, out.Error = out.all[0].GoMod, out.all[0].Error
	return out, nil
}

// refusedRE matches a module version the proxy or the checksum database refuses, e.g.
// "k8s.io/endpointslice@v0.31.14: reading https://proxy.golang.org/...: 403 Forbidden".
var refusedRE = regexp.MustCompile(`^([\w.\-/]+@v[\w.\-+]+): .*: (403|404|410) ([\w ]+)`)

// refusalOr turns a go command's module error into a refusal, or an error when it is not one
// (the proxy unreachable: the question stays open).
func refusalOr(msg string) (string, error) {
	m := refusedRE.FindStringSubmatch(strings.SplitN(msg, "\n", 2)[0])
	if m == nil {
		return "", errors.New(strings.SplitN(msg, "\n", 2)[0])
	}
	what := "serve"
	if strings.Contains(msg, "/sumdb/") {
		what = "have a checksum for"
	}
	return fmt.Sprintf("the Go module proxy does not %s %s: %s %s", what, m[1], m[2], strings.TrimSpace(m[3])), nil
}
