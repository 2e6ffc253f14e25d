// Command matrix runs the conformance matrix: every distribution x the newest Kubernetes minors x
// every identity path of matrix/catalog.yaml, one cluster per distribution and version, and writes
// a report (Markdown, HTML with every cell's logs, JUnit XML, JSON) into --out. Across machines,
// each runs one shard of the plan and `matrix merge` joins their reports into one.
//
//	go run ./matrix/cmd/matrix --list
//	go run ./matrix/cmd/matrix --cells 'kubeadm/1.33/*' --budget 50m --allow-host-changes
//	go run ./matrix/cmd/matrix --shard 2/3 --out _output/matrix/shard-2 --allow-host-changes
//	go run ./matrix/cmd/matrix merge --out _output/matrix/merged _output/matrix/shard-*
//
//	go run ./matrix/cmd/matrix --baseline old/results.json
//	KUBECONFIG=~/.kube/config SEALION_EXISTING_PROFILE=eks go run ./matrix/cmd/matrix --installed
//
// It exits 1 when a cell failed (a flaky cell, which passed when re-run, does not), 2 on bad
// usage or an unreadable baseline.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"sealion.dev/matrix"
	"sealion.dev/matrix/baseline"
	"sealion.dev/matrix/ciworkflow"
	"sealion.dev/matrix/hostcheck"
	"sealion.dev/matrix/kubeversions"
	"sealion.dev/matrix/merge"
	"sealion.dev/matrix/report"
	"sealion.dev/matrix/run"
	"sealion.dev/providers"
	"sealion.dev/providers/all"
)

func main() {
	all.Main() // first, as in every program linking the providers, though this one creates no cluster itself
	code, err := matrixMain(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "matrix: %v\n", err)
	}
	os.Exit(code)
}

type options struct {
	cells            string
	shard            string
	list             bool
	releases         bool
	budget           time.Duration
	out              string
	minors           int
	skipHostChecks   bool
	allowHostChanges bool
	testTimeout      time.Duration
	baseline         string
	installed        bool
}

func matrixMain(args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 {
		switch args[0] {
		case "merge":
			return mergeMain(args[1:], stdout, stderr)
		case "ci-workflow":
			return ciWorkflowMain(args[1:], stderr)
		}
	}
	var o options
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: matrix [flags]                 run the matrix, or a shard of it (--shard)\n"+
			"       matrix merge --out DIR SHARD...  join the shards' reports (matrix merge --help)\n"+
			"       matrix ci-workflow [--shards N]  write the GitHub Actions workflow running N shards (matrix ci-workflow --help)\n\nflags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.cells, "cells", "", "cells to run: patterns distribution/version/path, globs per part, {a,b} alternatives, "+
		"separated by commas or spaces (e.g. 'kind/1.33/*', '{kubeadm,gke}/1.33/webhook'), one that starts with - takes cells away "+
		"('kubeadm/1.33 -kubeadm/*/faults'); the version 'newest' is the newest minor; empty runs every cell")
	fs.StringVar(&o.shard, "shard", "", "run only shard i of n of the plan (e.g. 2/3): whole groups, the same slice on every machine "+
		"for the same plan; `matrix merge` joins the shards' reports")
	fs.BoolVar(&o.list, "list", false, "print the selected cells and whether each would run, then exit")
	fs.BoolVar(&o.releases, "releases", false, "print the Kubernetes releases the selected groups use, space-separated, then exit (CI keys its cache of Kubernetes builds by them)")
	fs.DurationVar(&o.budget, "budget", 0, "time budget: groups not started when it runs out are reported as not run (0: none)")
	fs.StringVar(&o.out, "out", "_output/matrix", "report folder (relative to the repository root)")
	fs.IntVar(&o.minors, "minors", 7, "how many of the newest Kubernetes minors to run")
	fs.BoolVar(&o.skipHostChecks, "skip-host-checks", false, "run versions this machine's checks say cannot run here (cgroup v1, containerd)")
	fs.BoolVar(&o.allowHostChanges, "allow-host-changes", false, "let providers that run clusters on this machine change it "+
		"(CI=true or SEALION_ALLOW_HOST_CHANGES=true do too)")
	fs.DurationVar(&o.testTimeout, "test-timeout", 60*time.Minute, "go test -timeout of one group; a group that hits it leaves its cluster behind")
	fs.BoolVar(&o.installed, "installed", false, "test the Concierge and Supervisor installed on the cluster of KUBECONFIG (the existing "+
		"distribution; SEALION_EXISTING_PROFILE says its kind): found, not installed, and left as they are; the report starts with what was found")
	fs.StringVar(&o.baseline, "baseline", "", "an earlier run's "+report.JSONFile+": mark each cell a regression, fixed or a new pass against it")
	if err := fs.Parse(args); err != nil {
		return 2, nil
	}
	if fs.NArg() > 0 {
		return 2, fmt.Errorf("unexpected arguments %q (cells go in --cells)", fs.Args())
	}
	var shard *matrix.Shard
	if o.shard != "" {
		s, err := matrix.ParseShard(o.shard)
		if err != nil {
			return 2, err
		}
		shard = &s
	}
	var base matrix.Results
	if o.baseline != "" {
		var err error
		if base, err = baseline.Load(o.baseline); err != nil {
			return 2, err
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cat, err := matrix.DefaultCatalog()
	if err != nil {
		return 2, err
	}
	filter, err := matrix.ParseFilter(o.cells)
	if err != nil {
		return 2, err
	}
	repo, err := repoRoot()
	if err != nil {
		return 2, err
	}
	cache := cacheDir()
	resolver := kubeversions.Resolver{
		CacheFile:   filepath.Join(cache, "matrix", "kubernetes-versions.json"),
		VerdictFile: filepath.Join(cache, "matrix", "kubernetes-served.json"),
		MaxAge:      24 * time.Hour,
	}
	versions, warning, err := resolver.Newest(ctx, o.minors)
	if err != nil {
		return 2, err
	}
	if warning != "" {
		fmt.Fprintf(stderr, "matrix: %s\n", warning)
	}
	if len(versions) > 0 {
		filter = filter.WithMinors(versions[len(versions)-1].Minor, versions[0].Minor)
	}
	// Only the minors the cells select are checked: a cold check downloads the release's modules.
	for i, v := range versions {
		if cat.Selects(filter, v) {
			if versions[i], warning = resolver.Served(ctx, v); warning != "" {
				fmt.Fprintf(stderr, "matrix: %s\n", warning)
			}
		}
	}
	host := hostcheck.Detect(ctx)
	plan, err := cat.Plan(matrix.PlanOptions{
		Versions: versions, Filter: filter, Providers: all.Names,
		Host: host, SkipHostChecks: o.skipHostChecks, Getenv: os.Getenv, Installed: o.installed,
	})
	if err != nil {
		return 2, err
	}
	groups := plan
	if shard != nil {
		groups = shard.Select(cat, plan)
	}
	if o.releases {
		var releases []string
		byMinor := slices.SortedStableFunc(slices.Values(groups), func(a, b matrix.Group) int { return a.Version.MinorNumber() - b.Version.MinorNumber() })
		for _, g := range byMinor {
			if r := g.Version.Release; r != "" && !slices.Contains(releases, r) {
				releases = append(releases, r)
			}
		}
		fmt.Fprintln(stdout, strings.Join(releases, " "))
		return 0, nil
	}
	if o.list {
		if shard != nil {
			fmt.Fprintf(stdout, "shard %s: %d of the plan's %d groups\n", shard, len(groups), len(plan))
		}
		return 0, list(stdout, cat, groups, host)
	}
	for _, g := range groups {
		if g.Runs() && g.Distribution.OnHost {
			if err := providers.CheckHostChangesAllowed(g.Distribution.Name, o.allowHostChanges, nil); err != nil {
				return 2, fmt.Errorf("%s: %w", g.Name(), err)
			}
		}
	}

	out := o.out
	if !filepath.IsAbs(out) {
		out = filepath.Join(repo, out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 2, err
	}
	r := &run.Runner{
		Catalog: cat, Repo: repo, Out: out, Cache: cache, Budget: o.budget, TestTimeout: o.testTimeout,
		AllowHostChanges: o.allowHostChanges, Installed: o.installed, Progress: stderr, Color: colorTerminal(stderr, os.Getenv),
	}
	stop := make(chan struct{})
	interrupted := make(chan os.Signal, 1)
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		interrupted <- <-signals
		fmt.Fprintln(stderr, "matrix: interrupted: the running group finishes (and tears its cluster down), no other starts; interrupt again to stop it now, leaving its cluster behind")
		close(stop)
		<-signals
		cancel()
	}()

	res := r.Run(ctx, groups, stop)
	res.Host, res.Commit = host.String(), commit(repo)
	if shard != nil {
		res.Shard, res.Plan = shard, matrix.CellNames(plan)
	}
	if o.baseline != "" {
		baseline.Mark(&res, base, o.baseline)
	}
	if err := report.WriteAll(out, res); err != nil {
		return 1, err
	}
	if err := report.Markdown(stdout, res); err != nil {
		return 1, err
	}
	fmt.Fprintf(stderr, "matrix: report in %s (%s, %s, %s)\n", out, report.HTMLFile, report.MarkdownFile, report.JUnitFile)
	select {
	case sig := <-interrupted:
		// An interrupted run proved less than was asked: it must not pass for a run that did,
		// as make test would take a 0 for one and go on.
		return interruptedStatus(sig), fmt.Errorf("interrupted (%v): the report has the cells that ran, the others are not run", sig)
	default:
	}
	if res.Failed() {
		return 1, errors.New("some cells failed")
	}
	return 0, nil
}

// interruptedStatus is the exit status of a run ended by sig, as a shell reports a command killed
// by it: 128 plus its number.
func interruptedStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// mergeMain is `matrix merge`: it joins the reports of a plan's shards into the report of the
// whole plan and exits as a run of it would.
func mergeMain(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("matrix merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "_output/matrix/merged", "folder of the merged report, which gets the shards' logs too (relative to the working directory)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: matrix merge [--out DIR] SHARD...\n\n"+
			"Joins the reports of every shard of one plan (matrix --shard i/n) into one report: JUnit, Markdown, HTML\n"+
			"and JSON in --out, the Markdown on stdout. A SHARD is a shard's "+report.JSONFile+" or its report folder;\n"+
			"a shell glob gives them all (_output/matrix/shard-*). The shards must be of the same plan and commit,\n"+
			"each cell in exactly one. Their log files are copied into --out at the same relative paths.\n"+
			"It exits 1 when a cell failed, 2 when the shards do not merge.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2, nil
	}
	if fs.NArg() == 0 {
		return 2, errors.New("merge: name the shards' " + report.JSONFile + " files or report folders (e.g. _output/matrix/shard-*)")
	}
	res, err := merge.Merge(*out, fs.Args(), stderr)
	if err != nil {
		return 2, fmt.Errorf("merge: %w", err)
	}
	if err := report.WriteAll(*out, res); err != nil {
		return 1, err
	}
	if err := report.Markdown(stdout, res); err != nil {
		return 1, err
	}
	fmt.Fprintf(stderr, "matrix merge: report in %s (%s, %s, %s)\n", *out, report.HTMLFile, report.MarkdownFile, report.JUnitFile)
	if res.Failed() {
		return 1, errors.New("some cells failed")
	}
	return 0, nil
}

// ciWorkflowMain is `matrix ci-workflow`: it writes the GitHub Actions workflow of the sharded matrix.
func ciWorkflowMain(args []string, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("matrix ci-workflow", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shards := fs.Int("shards", ciworkflow.DefaultShards, "how many runners share the matrix, one shard each")
	out := fs.String("out", ciworkflow.File, "the workflow file (relative to the repository root); a unit test checks that "+
		ciworkflow.File+" is what the defaults write")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: matrix ci-workflow [--shards N] [--out FILE]\n\n"+
			"Writes a GitHub Actions workflow: on push, pull request or by hand, a job per shard (matrix --shard i/N) on\n"+
			"an Ubuntu runner, caching the Kubernetes builds of its releases and uploading its report folder, then a job\n"+
			"merging them (matrix merge) into one report, failing when a cell failed.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2, nil
	}
	if fs.NArg() > 0 {
		return 2, fmt.Errorf("ci-workflow: unexpected arguments %q", fs.Args())
	}
	data, err := ciworkflow.Render(*shards)
	if err != nil {
		return 2, fmt.Errorf("ci-workflow: %w", err)
	}
	path := *out
	if !filepath.IsAbs(path) {
		repo, err := repoRoot()
		if err != nil {
			return 2, err
		}
		path = filepath.Join(repo, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 1, err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return 1, err
	}
	fmt.Fprintf(stderr, "matrix ci-workflow: wrote %s (%d shards)\n", path, *shards)
	return 0, nil
}

// list prints one line per cell: what would run, or why it would not.
func list(w io.Writer, cat matrix.Catalog, groups []matrix.Group, host hostcheck.Host) error {
	fmt.Fprintf(w, "host: %s\n\n", host)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CELL\tKUBERNETES\tPLAN")
	for _, g := range groups {
		kube := g.Version.Release
		if kube == "" {
			kube = "(the cluster's)"
		}
		for i, c := range g.Cells() {
			p := g.Paths[i]
			var plan string
			switch {
			case !p.Built():
				plan = string(matrix.NotBuilt) + ": no e2e tests for this identity path yet"
			case g.Blocked.Status != "":
				plan = string(g.Blocked.Status) + ": " + g.Blocked.Reason
			default:
				plan = "runs " + strings.Join(p.Tests, ", ")
				if s := g.Distribution.Strategy; s != "" {
					plan += "; expects strategy " + s
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c, kube, plan)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	passedOver(w, groups)
	fmt.Fprintf(w, "\nEvery group (distribution/version) that runs also runs %s.\n", strings.Join(cat.Suite, ", "))
	return nil
}

// passedOver says, per minor, which newer patches were passed over because the Go module proxy
// does not serve them in full.
func passedOver(w io.Writer, groups []matrix.Group) {
	seen := map[string]bool{}
	for _, g := range groups {
		if line := g.Version.PassedOver(); line != "" && !seen[g.Version.Minor] {
			seen[g.Version.Minor] = true
			fmt.Fprintf(w, "\n%s %s", g.Version.Minor, line)
		}
	}
	if len(seen) > 0 {
		fmt.Fprintln(w)
	}
}

// colorTerminal reports whether w is a terminal and the user has not asked for no colour
// (NO_COLOR, no-color.org): a CI log or a file gets plain words.
func colorTerminal(w io.Writer, getenv func(string) string) bool {
	f, ok := w.(*os.File)
	return ok && getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd()))
}

// repoRoot is the closest folder up from the working directory whose go.mod is module sealion.dev.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			isRoot := sc.Scan() && strings.TrimSpace(sc.Text()) == "module sealion.dev"
			f.Close()
			if isRoot {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the sealion.dev repository (no go.mod of module sealion.dev above the working directory)")
		}
		dir = parent
	}
}

// cacheDir honours SEALION_CACHE, then the user cache folder, as tools/kubebuild does.
func cacheDir() string {
	if d := os.Getenv("SEALION_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "sealion")
	}
	return filepath.Join(os.TempDir(), "sealion-cache")
}

// commit names the checkout, "-dirty" when it has changes; empty outside git.
func commit(repo string) string {
	out, err := exec.Command("git", "-C", repo, "describe", "--always", "--dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
