// Package kubeversions finds the Kubernetes releases the matrix runs: for each of the newest minors
// that the Go module proxy lists for k8s.io/kubernetes (the source our binaries are built from),
// the newest patch whose modules the proxy serves in full. The list is cached for a day, and a
// stale cache stands in when the proxy cannot be reached.
package kubeversions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Module is the module whose versions are Kubernetes releases.
const Module = "k8s.io/kubernetes"

// Version is one Kubernetes minor and the release of it the matrix runs.
type Version struct {
	// Minor is "1.33", the label cells use.
	Minor string `json:"minor"`
	// Release is the patch the matrix runs, "v1.33.13": the newest one, or after Served the newest
	// one the proxy serves in full.
	Release string `json:"release"`
	// Passed are the newer patches Served passed over, newest first, and why.
	Passed []Refusal `json:"passed,omitempty"`
	// Unserved says why no patch of the minor can be built here; Release is then the newest.
	Unserved string `json:"unserved,omitempty"`

	// patches are the minor's releases the proxy lists, oldest first.
	patches []string
}

// patchesNewestFirst are the releases Served tries, Release alone when the list is unknown.
func (v Version) patchesNewestFirst() []string {
	if len(v.patches) == 0 {
		return []string{v.Release}
	}
	out := slices.Clone(v.patches)
	slices.Reverse(out)
	return out
}

// MinorNumber is the minor as a number (33 for "1.33"), 0 when Minor is not "1.N".
func (v Version) MinorNumber() int {
	major, minor, ok := strings.Cut(v.Minor, ".")
	n, err := strconv.Atoi(minor)
	if !ok || major != "1" || err != nil {
		return 0
	}
	return n
}

// Newest picks, from module versions ("v1.33.13"), the newest release of each of the n newest
// minors, oldest minor first, remembering the minor's other releases for Served. Pre-releases are
// ignored.
func Newest(versions []string, n int) []Version {
	patches := map[int][]int{}
	for _, v := range versions {
		if r, ok := parseRelease(v); ok && !slices.Contains(patches[r[0]], r[1]) {
			patches[r[0]] = append(patches[r[0]], r[1])
		}
	}
	minors := make([]int, 0, len(patches))
	for m := range patches {
		minors = append(minors, m)
	}
	slices.Sort(minors)
	if len(minors) > n {
		minors = minors[len(minors)-n:]
	}
	out := make([]Version, len(minors))
	for i, m := range minors {
		slices.Sort(patches[m])
		v := Version{Minor: fmt.Sprintf("1.%d", m)}
		for _, p := range patches[m] {
			v.patches = append(v.patches, fmt.Sprintf("v1.%d.%d", m, p))
		}
		v.Release = v.patches[len(v.patches)-1]
		out[i] = v
	}
	return out
}

// parseRelease reads "v1.MINOR.PATCH" without pre-release or build suffix.
func parseRelease(v string) ([2]int, bool) {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if !strings.HasPrefix(v, "v1.") || len(parts) != 3 {
		return [2]int{}, false
	}
	minor, err1 := strconv.Atoi(parts[1])
	patch, err2 := strconv.Atoi(parts[2])
	return [2]int{minor, patch}, err1 == nil && err2 == nil
}

// Resolver asks the Go module proxy, through the go command (so GOPROXY, GONOSUMDB and
// credentials apply as for any module), and caches the answers.
type Resolver struct {
	// CacheFile holds the last version list.
	CacheFile string
	// VerdictFile holds which releases the proxy serves in full (see Served).
	VerdictFile string
	// MaxAge is how long a cached list or refusal is used without asking again.
	MaxAge time.Duration
	// List returns the module's versions; nil runs `go list -m -versions`.
	List func(ctx context.Context) ([]string, error)
	// Check says whether a release is served in full; nil downloads its modules (goCheck).
	Check Check
	// Now is time.Now outside tests.
	Now func() time.Time
}

type cacheFile struct {
	Fetched  time.Time `json:"fetched"`
	Versions []string  `json:"versions"`
}

// Newest returns the newest release of each of the n newest minors. A warning (not an error) says
// when a stale cache stood in for an unreachable proxy.
func (r Resolver) Newest(ctx context.Context, n int) (versions []Version, warning string, err error) {
	now := r.now
	cached, cacheErr := r.readCache()
	if cacheErr == nil && now().Sub(cached.Fetched) < r.MaxAge {
		return Newest(cached.Versions, n), "", nil
	}
	list := r.List
	if list == nil {
		list = goList
	}
	fetched, err := list(ctx)
	if err != nil {
		if cacheErr != nil {
			return nil, "", fmt.Errorf("listing %s versions from the Go module proxy: %w", Module, err)
		}
		return Newest(cached.Versions, n), fmt.Sprintf("the Go module proxy did not answer (%v); using the versions listed on %s",
			err, cached.Fetched.Format(time.DateOnly)), nil
	}
	if len(Newest(fetched, 1)) == 0 {
		return nil, "", fmt.Errorf("the Go module proxy lists no %s release", Module)
	}
	if err := r.writeCache(cacheFile{Fetched: now(), Versions: fetched}); err != nil {
		return Newest(fetched, n), fmt.Sprintf("could not cache the versions: %v", err), nil
	}
	return Newest(fetched, n), "", nil
}

func (r Resolver) readCache() (cacheFile, error) {
	var c cacheFile
	raw, err := os.ReadFile(r.CacheFile)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("%s: %w", r.CacheFile, err)
	}
	if len(c.Versions) == 0 {
		return c, errors.New("empty version cache")
	}
	return c, nil
}

func (r Resolver) writeCache(c cacheFile) error {
	raw, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(r.CacheFile), 0o755); err != nil {
		return err
	}
	tmp := r.CacheFile + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, r.CacheFile)
}

func goList(ctx context.Context) ([]string, error) {
	// Outside any module, so the repository's go.mod plays no part.
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-json", "-versions", Module+"@latest")
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOWORK=off")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var m struct{ Versions []string }
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("reading go list output: %w", err)
	}
	return m.Versions, nil
}
