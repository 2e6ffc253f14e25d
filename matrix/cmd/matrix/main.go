// Command matrix runs the conformance matrix: every distribution x the newest Kubernetes minors x
// every identity path of matrix/catalog.yaml, one cluster per distribution and version, and writes
// a report (Markdown, HTML with every cell's logs, JUnit XML, JSON) into --out.
//
//	go run ./matrix/cmd/matrix --list
//	go run ./matrix/cmd/matrix --cells 'kubeadm/1.33/*' --budget 50m --allow-host-changes
//
//	go run ./matrix/cmd/matrix --baseline old/results.json
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
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"sealion.dev/matrix"
	"sealion.dev/matrix/baseline"
	"sealion.dev/matrix/hostcheck"
	"sealion.dev/matrix/kubeversions"
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
	list             bool
	budget           time.Duration
	out              string
	minors           int
	skipHostChecks   bool
	allowHostChanges bool
	testTimeout      time.Duration
	baseline         string
}

func matrixMain(args []string, stdout, stderr io.Writer) (int, error) {
	var o options
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.cells, "cells", "", "cells to run: patterns distribution/version/path, globs per part, {a,b} alternatives, "+
		"separated by commas or spaces (e.g. 'kind/1.33/*', '{kubeadm,gke}/1.33/webhook'); empty runs every cell")
	fs.BoolVar(&o.list, "list", false, "print the selected cells and whether each would run, then exit")
	fs.DurationVar(&o.budget, "budget", 0, "time budget: groups not started when it runs out are reported as not run (0: none)")
	fs.StringVar(&o.out, "out", "_output/matrix", "report folder (relative to the repository root)")
	fs.IntVar(&o.minors, "minors", 6, "how many of the newest Kubernetes minors to run")
	fs.BoolVar(&o.skipHostChecks, "skip-host-checks", false, "run versions this machine's checks say cannot run here (cgroup v1, containerd)")
	fs.BoolVar(&o.allowHostChanges, "allow-host-changes", false, "let providers that run clusters on this machine change it "+
		"(CI=true or SEALION_ALLOW_HOST_CHANGES=true do too)")
	fs.DurationVar(&o.testTimeout, "test-timeout", 60*time.Minute, "go test -timeout of one group; a group that hits it leaves its cluster behind")
	fs.StringVar(&o.baseline, "baseline", "", "an earlier run's "+report.JSONFile+": mark each cell a regression, fixed or a new pass against it")
	if err := fs.Parse(args); err != nil {
		return 2, nil
	}
	if fs.NArg() > 0 {
		return 2, fmt.Errorf("unexpected arguments %q (cells go in --cells)", fs.Args())
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
	versions, warning, err := kubeversions.Resolver{
		CacheFile: filepath.Join(cache, "matrix", "kubernetes-versions.json"), MaxAge: 24 * time.Hour,
	}.Newest(ctx, o.minors)
	if err != nil {
		return 2, err
	}
	if warning != "" {
		fmt.Fprintf(stderr, "matrix: %s\n", warning)
	}
	host := hostcheck.Detect(ctx)
	groups, err := cat.Plan(matrix.PlanOptions{
		Versions: versions, Filter: filter, Providers: all.Names,
		Host: host, SkipHostChecks: o.skipHostChecks, Getenv: os.Getenv,
	})
	if err != nil {
		return 2, err
	}
	if o.list {
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
		AllowHostChanges: o.allowHostChanges, Progress: stderr, Color: colorTerminal(stderr, os.Getenv),
	}
	stop := make(chan struct{})
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		<-signals
		fmt.Fprintln(stderr, "matrix: interrupted: the running group finishes (and tears its cluster down), no other starts; interrupt again to stop it now, leaving its cluster behind")
		close(stop)
		<-signals
		cancel()
	}()

	res := r.Run(ctx, groups, stop)
	res.Host, res.Commit = host.String(), commit(repo)
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
	if res.Failed() {
		return 1, errors.New("some cells failed")
	}
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
	fmt.Fprintf(w, "\nEvery group (distribution/version) that runs also runs %s.\n", strings.Join(cat.Suite, ", "))
	return nil
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
