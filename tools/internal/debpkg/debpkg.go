// Package debpkg unpacks Debian packages, with everything they depend on, into a directory of
// their own, so that an image can take programs (iptables for kube-proxy) from Debian instead of
// from whatever the build host happens to have installed. Nothing is installed and the host's apt
// state is not touched: apt-get and apt-cache run with package lists and archives of their own
// under the cache, and `dpkg-deb -x` unpacks. The host's apt sources (its Debian mirror) are used.
package debpkg

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
)

// Cache is apt state and unpacked trees under Dir (<cache>/debian).
type Cache struct {
	Dir string
}

// Unpack returns a directory holding the named packages and their dependencies (Depends and
// Pre-Depends, recursively), unpacked as they would be installed but without running their
// scripts. The tree is keyed by the exact .deb files, so it is reused until Debian publishes a new
// version of one of them; a half-written tree is never returned.
func (c Cache) Unpack(ctx context.Context, packages ...string) (string, error) {
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("unpacking Debian packages needs %s (Debian's apt and dpkg): %w", tool, err)
		}
	}
	if err := c.ensureLists(ctx, false); err != nil {
		return "", err
	}
	names, err := c.closure(ctx, packages)
	if err != nil {
		return "", err
	}
	debs, err := c.download(ctx, names)
	if err != nil {
		// A list older than the mirror names versions it no longer serves: refresh once.
		if err := c.ensureLists(ctx, true); err != nil {
			return "", err
		}
		if debs, err = c.download(ctx, names); err != nil {
			return "", err
		}
	}
	return c.unpack(ctx, debs)
}

// aptOptions point apt at state of our own: lists and archives under the cache, an empty status
// (nothing counts as installed, so every dependency is fetched), no lock on the host's state.
func (c Cache) aptOptions() []string {
	return []string{
		"-o", "Dir::State::Lists=" + filepath.Join(c.Dir, "apt", "lists"),
		"-o", "Dir::Cache=" + filepath.Join(c.Dir, "apt", "cache"),
		"-o", "Dir::State::status=/dev/null",
		"-o", "Debug::NoLocking=true",
		// As root, apt downloads as the _apt user, which cannot write to root's cache.
		"-o", "APT::Sandbox::User=" + currentUser(),
	}
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}

// ensureLists fetches the package lists when there are none yet, or when refresh is set.
func (c Cache) ensureLists(ctx context.Context, refresh bool) error {
	lists := filepath.Join(c.Dir, "apt", "lists")
	if !refresh {
		if m, _ := filepath.Glob(filepath.Join(lists, "*_Packages*")); len(m) > 0 {
			return nil
		}
	}
	for _, d := range []string{filepath.Join(lists, "partial"), filepath.Join(c.Dir, "apt", "cache", "archives", "partial")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if _, err := c.run(ctx, "", "apt-get", append(c.aptOptions(), "-qq", "update")...); err != nil {
		return fmt.Errorf("fetching Debian's package lists: %w", err)
	}
	return nil
}

// closure lists the packages and everything they depend on, sorted.
func (c Cache) closure(ctx context.Context, packages []string) ([]string, error) {
	args := append(c.aptOptions(), "depends", "--recurse", "--no-recommends", "--no-suggests",
		"--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances")
	out, err := c.run(ctx, "", "apt-cache", append(args, packages...)...)
	if err != nil {
		return nil, fmt.Errorf("resolving the dependencies of %s: %w", strings.Join(packages, " "), err)
	}
	return parseDepends(out), nil
}

// parseDepends takes the package names of `apt-cache depends --recurse` output: unindented lines,
// without virtual packages (<name>), which a real package in the list provides.
func parseDepends(out []byte) []string {
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if line == "" || strings.HasPrefix(line, " ") || strings.HasPrefix(line, "<") {
			continue
		}
		names = append(names, strings.TrimSpace(line))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// download fetches the packages' .deb files (kept: apt-get skips a file it already has) and
// returns their paths, sorted.
func (c Cache) download(ctx context.Context, names []string) ([]string, error) {
	dir := filepath.Join(c.Dir, "debs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := c.run(ctx, dir, "apt-get", append(append(c.aptOptions(), "-qq", "download"), names...)...); err != nil {
		return nil, fmt.Errorf("downloading %s: %w", strings.Join(names, " "), err)
	}
	// apt-get names a file <name>_<version>_<arch>.deb, the version with ':' escaped as %3a.
	var debs []string
	for _, n := range names {
		m, err := filepath.Glob(filepath.Join(dir, n+"_*.deb"))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("apt-get download left no .deb of %s in %s", n, dir)
		}
		slices.Sort(m)
		debs = append(debs, newest(ctx, m))
	}
	return debs, nil
}

// newest picks the highest version among the cached .deb files of one package (older ones stay
// from earlier downloads).
func newest(ctx context.Context, debs []string) string {
	best := debs[0]
	for _, d := range debs[1:] {
		if exec.CommandContext(ctx, "dpkg", "--compare-versions", debVersion(d), "gt", debVersion(best)).Run() == nil {
			best = d
		}
	}
	return best
}

func debVersion(deb string) string {
	parts := strings.Split(strings.TrimSuffix(filepath.Base(deb), ".deb"), "_")
	if len(parts) < 2 {
		return ""
	}
	return strings.ReplaceAll(parts[1], "%3a", ":")
}

// unpack extracts debs into a tree named after their file names, reusing a finished one.
func (c Cache) unpack(ctx context.Context, debs []string) (string, error) {
	h := sha256.New()
	for _, d := range debs {
		fmt.Fprintln(h, filepath.Base(d))
	}
	root := filepath.Join(c.Dir, "roots", hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(root); err == nil {
		return root, nil
	}
	tmp := root + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	for _, d := range debs {
		if _, err := c.run(ctx, "", "dpkg-deb", "-x", d, tmp); err != nil {
			return "", fmt.Errorf("unpacking %s: %w", d, err)
		}
	}
	return root, os.Rename(tmp, root)
}

func (c Cache) run(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return nil, err
		}
		return nil, errors.New(name + ": " + msg)
	}
	return out, nil
}
