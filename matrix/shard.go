package matrix

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Shard is slice Index (1-based) of Count of a plan: `matrix --shard i/n` runs one on each of n
// machines, and `matrix merge` puts their results together again.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ParseShard reads "i/n", 1 <= i <= n.
func ParseShard(text string) (Shard, error) {
	is, ns, ok := strings.Cut(text, "/")
	i, ierr := strconv.Atoi(is)
	n, nerr := strconv.Atoi(ns)
	if !ok || ierr != nil || nerr != nil {
		return Shard{}, fmt.Errorf("shard %q is not i/n (e.g. 1/3)", text)
	}
	if n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("shard %q is out of range: it needs 1 <= i <= n", text)
	}
	return Shard{Index: i, Count: n}, nil
}

// Select returns the groups of the plan this shard runs, in plan order. A group is never split,
// since its cells share one cluster. s is a valid shard (ParseShard makes them).
//
// While there are no more shards than Kubernetes minors, a minor is not split either: its
// Kubernetes is built (9 to 20 minutes on two cores) or restored from a cache on the one shard
// that runs its groups, where a split by group alone has every shard build nearly every minor.
// With more shards than minors, the groups are the units.
//
// Units go to shards greedily, costliest first, each to the shard with the least cost so far
// (lowest index on a tie): this "longest processing time first" rule keeps the slowest shard within
// 4/3 of the best split of those units, where round-robin can put every large one on one shard. A
// group's cost is the number of tests its go test runs; the suite's share stands for the cluster's
// set-up. Groups that do not run anywhere (no provider, no built path) cost nothing, yet each still
// goes to exactly one shard, so that the merged report lists every planned cell once.
//
// Only the plan's shape decides (catalog, versions, --cells, this build's providers): not the
// host checks or environment variables, which may differ between the machines running the shards
// and would then run a group twice or never. Ties are broken by name, not by map order or time.
func (s Shard) Select(c Catalog, groups []Group) []Group {
	unitOf := Group.Name
	if minors := distinctMinors(groups); s.Count <= minors {
		unitOf = func(g Group) string { return g.Version.Minor }
	}
	type unit struct {
		name    string
		cost    int
		members []int
	}
	byName := map[string]*unit{}
	var units []*unit
	for i, g := range groups {
		u := byName[unitOf(g)]
		if u == nil {
			u = &unit{name: unitOf(g)}
			byName[u.name] = u
			units = append(units, u)
		}
		u.cost += groupCost(c, g)
		u.members = append(u.members, i)
	}
	slices.SortFunc(units, func(a, b *unit) int {
		return cmp.Or(cmp.Compare(b.cost, a.cost), strings.Compare(a.name, b.name))
	})
	load := make([]int, s.Count)
	var mine []int
	for _, u := range units {
		least := 0
		for j := range load {
			if load[j] < load[least] {
				least = j
			}
		}
		load[least] += u.cost
		if least == s.Index-1 {
			mine = append(mine, u.members...)
		}
	}
	slices.Sort(mine)
	out := make([]Group, len(mine))
	for i, gi := range mine {
		out[i] = groups[gi]
	}
	return out
}

// groupCost is the number of tests g's go test runs, 0 for a group that runs nowhere.
func groupCost(c Catalog, g Group) int {
	if g.Blocked.Status == NotBuilt || !slices.ContainsFunc(g.Paths, IdentityPath.Built) {
		return 0
	}
	tests := slices.Clone(c.Suite)
	for _, p := range g.Paths {
		tests = append(tests, p.Tests...)
	}
	slices.Sort(tests)
	return len(slices.Compact(tests))
}

// distinctMinors counts the Kubernetes minors of the groups ("cluster", a cluster's own version,
// counting as one).
func distinctMinors(groups []Group) int {
	seen := map[string]bool{}
	for _, g := range groups {
		seen[g.Version.Minor] = true
	}
	return len(seen)
}

// CellNames lists the groups' cells, in order, as "distribution/version/path".
func CellNames(groups []Group) []string {
	var out []string
	for _, g := range groups {
		for _, c := range g.Cells() {
			out = append(out, c.String())
		}
	}
	return out
}
