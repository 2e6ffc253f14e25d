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
// Groups go to shards greedily, costliest first, each to the shard with the least cost so far
// (lowest index on a tie): this "longest processing time first" rule keeps the slowest shard within
// 4/3 of the best split, where round-robin can put every large group on one shard. A group's cost
// is the number of tests its go test runs; the suite's share stands for the cluster's set-up.
// Groups that do not run anywhere (no provider, no built path) cost nothing, yet each still goes
// to exactly one shard, so that the merged report lists every planned cell once.
//
// Only the plan's shape decides (catalog, versions, --cells, this build's providers): not the
// host checks or environment variables, which may differ between the machines running the shards
// and would then run a group twice or never. Ties are broken by group name, not by map order or time.
func (s Shard) Select(c Catalog, groups []Group) []Group {
	type entry struct {
		index, cost int
		name        string
	}
	entries := make([]entry, len(groups))
	for i, g := range groups {
		cost := 0
		if g.Blocked.Status != NotBuilt && slices.ContainsFunc(g.Paths, IdentityPath.Built) {
			tests := slices.Clone(c.Suite)
			for _, p := range g.Paths {
				tests = append(tests, p.Tests...)
			}
			slices.Sort(tests)
			cost = len(slices.Compact(tests))
		}
		entries[i] = entry{index: i, cost: cost, name: g.Name()}
	}
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(b.cost, a.cost), strings.Compare(a.name, b.name))
	})
	load := make([]int, s.Count)
	var mine []int
	for _, e := range entries {
		least := 0
		for j := range load {
			if load[j] < load[least] {
				least = j
			}
		}
		load[least] += e.cost
		if least == s.Index-1 {
			mine = append(mine, e.index)
		}
	}
	slices.Sort(mine)
	out := make([]Group, len(mine))
	for i, gi := range mine {
		out[i] = groups[gi]
	}
	return out
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
