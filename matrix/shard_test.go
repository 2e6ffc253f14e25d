package matrix

import (
	"slices"
	"testing"

	"sealion.dev/matrix/hostcheck"
)

func TestParseShard(t *testing.T) {
	t.Parallel()
	if s, err := ParseShard("2/3"); err != nil || s != (Shard{Index: 2, Count: 3}) || s.String() != "2/3" {
		t.Errorf("2/3: %+v, %v", s, err)
	}
	for _, bad := range []string{"0/3", "4/3", "x", "1/0", "-1/3", "1/", "/3", "1/3/4", "a/b", ""} {
		if s, err := ParseShard(bad); err == nil {
			t.Errorf("%q: %+v, want an error", bad, s)
		}
	}
}

func groupNames(groups []Group) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g.Name())
	}
	return out
}

// Shards split a plan into whole groups, each in exactly one shard, in plan order, costliest
// first to the least loaded shard; while shards are no more than minors, whole minors, so that
// each shard builds only its own Kubernetes versions.
func TestShardSelect(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	// kubeadm costs 8 suite tests + 15 of its paths = 23 (upgrade, device and sessions too), gke
	// 22 (kubeapps and upgrade), kind 0 (no provider).
	groups, err := c.Plan(planOpts("kubeadm/1.3{1,2},gke/1.31,kind/1.31", t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		count int
		want  [][]string
	}{
		// Two minors, two shards: 1.31 (45) to shard 1, 1.32 (23) to shard 2.
		{2, [][]string{{"kubeadm/1.31", "kind/1.31", "gke/1.31"}, {"kubeadm/1.32"}}},
		// More shards than minors: by group, costliest first, ties by name: kubeadm/1.31 (23) to
		// 1, kubeadm/1.32 (23) to 2, gke (22) to 3, kind (0) to 3, the least loaded.
		{3, [][]string{{"kubeadm/1.31"}, {"kubeadm/1.32"}, {"kind/1.31", "gke/1.31"}}},
	} {
		for i, want := range tt.want {
			if got := groupNames(Shard{i + 1, tt.count}.Select(c, groups)); !slices.Equal(got, want) {
				t.Errorf("shard %d/%d: %v, want %v", i+1, tt.count, got, want)
			}
		}
	}

	all, err := c.Plan(planOpts("", t))
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 9; n++ {
		var union []string
		minorShard := map[string]int{}
		for i := 1; i <= n; i++ {
			part := Shard{i, n}.Select(c, all)
			if len(part) == 0 {
				t.Errorf("shard %d/%d is empty", i, n)
			}
			union = append(union, CellNames(part)...)
			for _, g := range part {
				if n <= distinctMinors(all) && minorShard[g.Version.Minor] != 0 && minorShard[g.Version.Minor] != i {
					t.Errorf("%d shards: minor %s is on shards %d and %d", n, g.Version.Minor, minorShard[g.Version.Minor], i)
				}
				minorShard[g.Version.Minor] = i
			}
		}
		slices.Sort(union)
		want := slices.Sorted(slices.Values(CellNames(all)))
		if !slices.Equal(union, want) {
			t.Errorf("%d shards hold %d cells, the plan %d (or some twice)", n, len(union), len(want))
		}
	}
}

// The slice does not depend on what the machine running it can do (host checks, environment), so
// machines that differ still split the plan the same way.
func TestShardIgnoresHostAndEnv(t *testing.T) {
	t.Parallel()
	c, err := DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	o := planOpts("", t)
	here, err := c.Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	o.Host, o.Getenv = hostcheck.Host{Containerd: "2.1.0"}, func(k string) string {
		if k == "SEALION_EXISTING_PROFILE" {
			return "kubeadm"
		}
		return "set"
	}
	elsewhere, err := c.Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(blocked(here), blocked(elsewhere)) {
		t.Fatal("the two plans block the same groups: the test proves nothing")
	}
	for i := 1; i <= 3; i++ {
		s := Shard{i, 3}
		if a, b := groupNames(s.Select(c, here)), groupNames(s.Select(c, elsewhere)); !slices.Equal(a, b) {
			t.Errorf("shard %s: %v here, %v elsewhere", s, a, b)
		}
	}
}

func blocked(groups []Group) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g.Name()+": "+string(g.Blocked.Status))
	}
	return out
}
