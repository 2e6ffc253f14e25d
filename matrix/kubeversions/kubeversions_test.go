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

// proxyList is what the proxy served for k8s.io/kubernetes when this was written.
var proxyList = []string{"v1.13.0", "v1.29.6", "v1.30.4", "v1.30.14", "v1.31.0", "v1.31.14", "v1.32.2", "v1.32.13",
	"v1.33.6", "v1.33.13", "v1.34.0", "v1.34.2", "v1.34.3", "v1.34.4", "v1.35.4", "v1.36.1", "v1.36.3", "v1.37.0-alpha.1"}

func TestNewest(t *testing.T) {
	t.Parallel()
	got := releases(Newest(proxyList, 6))
	want := []string{"1.31 v1.31.14", "1.32 v1.32.13", "1.33 v1.33.13", "1.34 v1.34.4", "1.35 v1.35.4", "1.36 v1.36.3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Newest = %v, want %v", got, want)
	}
	numeric := Newest([]string{"v1.9.10", "v1.10.2", "v1.10.11", "junk", "v2.0.0", "v1.10.2"}, 1)
	if got := releases(numeric); !reflect.DeepEqual(got, []string{"1.10 v1.10.11"}) {
		t.Errorf("numeric ordering: %v", got)
	}
	if got := numeric[0].patchesNewestFirst(); !reflect.DeepEqual(got, []string{"v1.10.11", "v1.10.2"}) {
		t.Errorf("patches of 1.10, newest first, each once: %v", got)
	}
	if n := (Version{Minor: "1.35"}).MinorNumber(); n != 35 {
		t.Errorf("MinorNumber = %d", n)
	}
}

func releases(vs []Version) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Minor + " " + v.Release
	}
	return out
}

func TestResolverCaches(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	calls := 0
	listErr := error(nil)
	r := Resolver{
		CacheFile: filepath.Join(t.TempDir(), "versions.json"),
		MaxAge:    24 * time.Hour,
		Now:       func() time.Time { return now },
		List: func(context.Context) ([]string, error) {
			calls++
			return proxyList, listErr
		},
	}
	ctx := context.Background()
	if v, warn, err := r.Newest(ctx, 2); err != nil || warn != "" || len(v) != 2 || v[1].Release != "v1.36.3" {
		t.Fatalf("first call: %v %q %v", v, warn, err)
	}
	now = now.Add(time.Hour)
	if _, _, err := r.Newest(ctx, 2); err != nil || calls != 1 {
		t.Errorf("a fresh cache should answer: %d calls, %v", calls, err)
	}
	// A day later the proxy is asked again; when it fails, the stale answer stands in.
	now = now.Add(24 * time.Hour)
	listErr = errors.New("dial tcp: no route to host")
	v, warn, err := r.Newest(ctx, 2)
	if err != nil || calls != 2 || len(v) != 2 || !strings.Contains(warn, "no route to host") || !strings.Contains(warn, "2026-11-21") {
		t.Errorf("stale fallback: %v %q %v (%d calls)", v, warn, err, calls)
	}
}

func TestResolverWithoutCacheOrProxy(t *testing.T) {
	t.Parallel()
	r := Resolver{CacheFile: filepath.Join(t.TempDir(), "none.json"), List: func(context.Context) ([]string, error) {
		return nil, errors.New("proxy down")
	}}
	if _, _, err := r.Newest(context.Background(), 6); err == nil || !strings.Contains(err.Error(), "proxy down") {
		t.Errorf("err = %v", err)
	}
}
