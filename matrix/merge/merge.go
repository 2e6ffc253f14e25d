// Package merge puts the results of a plan's shards (matrix --shard i/n, one per machine) together
// into the results of the whole plan, as one run on one machine would have given them, and
// gathers the shards' log files into one report folder.
package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sealion.dev/matrix"
	"sealion.dev/matrix/report"
)

// shard is one input: its results and the folder they and their logs are in.
type shard struct {
	file, dir string
	res       matrix.Results
}

// Merge reads the shards' results (report.JSONFile files, or folders holding one), checks that
// they are every shard of one plan at one commit, each cell once, copies their log files into out
// and returns the plan's results, groups in plan order.
//
// Logs are copied, not linked: out then has the layout of a single run's report folder, so the
// relative paths in the results (log files, and those quoted in reasons) hold unchanged and the
// folder stands alone (one CI artifact). Cell folders never collide, as each group is in one
// shard; a shared artifact's build log that two shards both wrote keeps the first shard's name,
// and the others are renamed, the reasons naming them rewritten; warn is told.
func Merge(out string, sources []string, warn io.Writer) (matrix.Results, error) {
	if len(sources) == 0 {
		return matrix.Results{}, errors.New("no shard results given")
	}
	shards, err := read(sources, out)
	if err != nil {
		return matrix.Results{}, err
	}
	if err := check(shards); err != nil {
		return matrix.Results{}, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return matrix.Results{}, err
	}
	// In shard order, whatever the order given (a glob puts shard-10 before shard-2), so that the
	// same shard keeps a shared log's name.
	slices.SortStableFunc(shards, func(a, b shard) int { return a.res.Shard.Index - b.res.Shard.Index })
	copied := map[string]string{} // file written to out -> the shard file it came from
	for i := range shards {
		if err := copyLogs(out, &shards[i], copied, warn); err != nil {
			return matrix.Results{}, err
		}
	}
	return combine(shards), nil
}

func read(sources []string, out string) ([]shard, error) {
	absOut, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	var shards []shard
	for _, src := range sources {
		file := src
		if fi, err := os.Stat(src); err != nil {
			return nil, err
		} else if fi.IsDir() {
			file = filepath.Join(src, report.JSONFile)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		s := shard{file: file, dir: filepath.Dir(file)}
		if err := json.Unmarshal(data, &s.res); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if s.res.Shard == nil {
			return nil, fmt.Errorf("%s is not a shard's results (matrix --shard i/n writes them)", file)
		}
		absDir, err := filepath.Abs(s.dir)
		if err != nil {
			return nil, err
		}
		if rel, err := filepath.Rel(absDir, absOut); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("--out %s is inside the shard folder %s: choose a folder of its own", out, s.dir)
		}
		shards = append(shards, s)
	}
	return shards, nil
}

// check refuses shards that are not the shards of one plan at one commit, or that leave a cell
// out or report one twice.
func check(shards []shard) error {
	first := shards[0]
	seen := map[int]bool{} // shard indexes; a shard given twice shows as its cells twice, below
	for _, s := range shards {
		switch {
		case s.res.Commit != first.res.Commit:
			return fmt.Errorf("%s ran at commit %s, %s at %s: shards of different checkouts do not merge",
				first.file, orUnknown(first.res.Commit), s.file, orUnknown(s.res.Commit))
		case s.res.Shard.Count != first.res.Shard.Count:
			return fmt.Errorf("%s is shard %s, %s shard %s: not shards of one split", first.file, first.res.Shard, s.file, s.res.Shard)
		case !slices.Equal(s.res.Plan, first.res.Plan):
			return fmt.Errorf("%s and %s planned different cells (--cells, catalog or Kubernetes minors differ): %s",
				first.file, s.file, planDiff(first.res.Plan, s.res.Plan))
		}
		seen[s.res.Shard.Index] = true
	}

	cellFile := map[string]string{}
	releases := map[string]string{} // minor -> release, the first file saying it
	releaseFile := map[string]string{}
	for _, s := range shards {
		for _, g := range s.res.Groups {
			if r, ok := releases[g.Version.Minor]; ok && r != g.Version.Release {
				return fmt.Errorf("Kubernetes %s is %s in %s and %s in %s: the shards resolved different releases",
					g.Version.Minor, r, releaseFile[g.Version.Minor], g.Version.Release, s.file)
			}
			releases[g.Version.Minor], releaseFile[g.Version.Minor] = g.Version.Release, s.file
			if len(g.Paths) == 0 {
				return fmt.Errorf("group %s of %s has no cells", g.Name(), s.file)
			}
			for _, p := range g.Paths {
				cell := g.Name() + "/" + p.Name
				if other, dup := cellFile[cell]; dup {
					return fmt.Errorf("cell %s is in both %s and %s", cell, other, s.file)
				}
				if !slices.Contains(first.res.Plan, cell) {
					return fmt.Errorf("cell %s of %s is not in the plan it names", cell, s.file)
				}
				cellFile[cell] = s.file
			}
		}
	}
	var missing []string
	for _, cell := range first.res.Plan {
		if _, ok := cellFile[cell]; !ok {
			missing = append(missing, cell)
		}
	}
	if len(missing) > 0 {
		var absent []string
		for i := 1; i <= first.res.Shard.Count; i++ {
			if !seen[i] {
				absent = append(absent, fmt.Sprintf("%d/%d", i, first.res.Shard.Count))
			}
		}
		msg := fmt.Sprintf("no shard reports %d planned cells (%s)", len(missing), strings.Join(first3(missing), ", "))
		if len(absent) > 0 {
			msg += "; missing shards: " + strings.Join(absent, ", ")
		}
		return errors.New(msg)
	}
	return nil
}

func planDiff(a, b []string) string {
	for _, c := range a {
		if !slices.Contains(b, c) {
			return c + " only in the first"
		}
	}
	for _, c := range b {
		if !slices.Contains(a, c) {
			return c + " only in the second"
		}
	}
	return "the same cells in another order"
}

func first3(list []string) []string {
	if len(list) > 3 {
		return append(slices.Clone(list[:3]), "…")
	}
	return list
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// combine puts the checked shards' groups, shards in order, in plan order. The run began when the first shard began
// and took until the last one ended; hosts are named per shard when they differ.
func combine(shards []shard) matrix.Results {
	first := shards[0].res
	res := matrix.Results{Commit: first.Commit}
	var end time.Time
	var hosts []string
	for _, s := range shards {
		if res.Started.IsZero() || s.res.Started.Before(res.Started) {
			res.Started = s.res.Started
		}
		if e := s.res.Started.Add(s.res.Duration); e.After(end) {
			end = e
		}
		res.Budget = max(res.Budget, s.res.Budget)
		hosts = append(hosts, "shard "+s.res.Shard.String()+": "+s.res.Host)
		res.Groups = append(res.Groups, s.res.Groups...)
	}
	res.Duration = end.Sub(res.Started)
	res.Host = first.Host
	if slices.ContainsFunc(shards, func(s shard) bool { return s.res.Host != first.Host }) {
		res.Host = strings.Join(hosts, "; ")
	}
	position := func(g matrix.GroupResult) int {
		return slices.Index(first.Plan, g.Name()+"/"+g.Paths[0].Name)
	}
	slices.SortStableFunc(res.Groups, func(a, b matrix.GroupResult) int { return position(a) - position(b) })
	return res
}

// copyLogs copies every file of the shard's folder but its report into out, at the same relative
// path; a file another shard already wrote there with other content gets a name of this shard's,
// and the shard's results are made to name it.
func copyLogs(out string, s *shard, copied map[string]string, warn io.Writer) error {
	return filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(s.dir, path)
		if err != nil {
			return err
		}
		if slices.Contains([]string{report.JSONFile, report.MarkdownFile, report.HTMLFile, report.JUnitFile}, rel) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if from, taken := copied[rel]; taken {
			earlier, err := os.ReadFile(filepath.Join(out, rel))
			if err != nil {
				return err
			}
			if string(earlier) == string(data) {
				return nil
			}
			ext := filepath.Ext(rel)
			renamed := fmt.Sprintf("%s.shard-%d%s", strings.TrimSuffix(rel, ext), s.res.Shard.Index, ext)
			fmt.Fprintf(warn, "matrix merge: %s and %s both have %s; the second is kept as %s\n",
				from, s.file, filepath.ToSlash(rel), filepath.ToSlash(renamed))
			rename(&s.res, filepath.ToSlash(rel), filepath.ToSlash(renamed))
			rel = renamed
		}
		if err := os.MkdirAll(filepath.Join(out, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		copied[rel] = s.file
		return os.WriteFile(filepath.Join(out, rel), data, 0o644)
	})
}

// rename makes the results name a log file by its new path, in file lists, test logs and reasons.
func rename(r *matrix.Results, old, renamed string) {
	fix := func(s *string) { *s = strings.ReplaceAll(*s, old, renamed) }
	tests := func(ts []matrix.TestOutcome) {
		for i := range ts {
			fix(&ts[i].Reason)
			fix(&ts[i].Log)
		}
	}
	for gi := range r.Groups {
		g := &r.Groups[gi]
		fix(&g.Reason)
		for i := range g.Files {
			fix(&g.Files[i])
		}
		if g.Strategy != nil {
			fix(&g.Strategy.Reason)
			tests(g.Strategy.Tests)
		}
		for pi := range g.Paths {
			fix(&g.Paths[pi].Reason)
			tests(g.Paths[pi].Tests)
		}
	}
}
