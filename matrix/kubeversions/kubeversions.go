// Package kubeversions finds the Kubernetes releases the matrix runs: the newest patch of each of
// the newest minors that the Go module proxy serves for k8s.io/kubernetes (the source our binaries
// are built from). The answer is cached for a day, and a stale cache stands in when the proxy
// cannot be reached.
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
	// Release is the newest patch release of the minor, "v1.33.13".
	Release string `json:"release"`
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
// minors, oldest minor first. Pre-releases are ignored.
func Newest(versions []string, n int) []Version {
	best := map[int]int{}
	for _, v := range versions {
		r, ok := parseRelease(v)
		if !ok {
			continue
		}
		if p, seen := best[r[0]]; !seen || r[1] > p {
			best[r[0]] = r[1]
		}
	}
	minors := make([]int, 0, len(best))
	for m := range best {
		minors = append(minors, m)
	}
	slices.Sort(minors)
	if len(minors) > n {
		minors = minors[len(minors)-n:]
	}
	out := make([]Version, len(minors))
	for i, m := range minors {
		out[i] = Version{Minor: fmt.Sprintf("1.%d", m), Release: fmt.Sprintf("v1.%d.%d", m, best[m])}
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
// credentials apply as for any module), and caches the answer.
type Resolver struct {
	// CacheFile holds the last answer.
	CacheFile string
	// MaxAge is how long a cached answer is used without asking again.
	MaxAge time.Duration
	// List returns the module's versions; nil runs `go list -m -versions`.
	List func(ctx context.Context) ([]string, error)
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
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
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
