package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/semver"

	"sealion.dev/tools/internal/gobuild"
)

// versionPkg holds the version stamps that `pinniped version` and the servers' /version report.
const versionPkg = "k8s.io/component-base/version"

// platform is an operating system and architecture the release builds for.
type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

// releasePlatforms are the CLI's release targets; the linux ones are the server image's too.
var releasePlatforms = []platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// parsePlatforms reads --platforms: "all", or a comma-separated subset of releasePlatforms that
// names at least one linux platform, since every release has a server image. A subset is for
// what runs on one machine (make demo); a release users download is made for all.
func parsePlatforms(list string) ([]platform, error) {
	if list == "all" {
		return releasePlatforms, nil
	}
	var out []platform
	linux := false
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(releasePlatforms, func(p platform) bool { return p.String() == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("platform %q is not one the release builds for (%s)", name, platformNames(releasePlatforms))
		}
		if slices.Contains(out, releasePlatforms[i]) {
			continue
		}
		out = append(out, releasePlatforms[i])
		linux = linux || releasePlatforms[i].os == "linux"
	}
	if !linux {
		return nil, fmt.Errorf("platforms %q name no linux platform, for which the server image is built", list)
	}
	return out, nil
}

func platformNames(ps []platform) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.String()
	}
	return strings.Join(names, ", ")
}

// release is one run: where the sources are, what they are stamped with, where the artefacts go.
type release struct {
	version  string
	repoRoot string
	out      string
	registry string
	insecure bool
	caBundle string
	// platforms are the CLI's and, for linux, the server image's.
	platforms []platform
	// commit, treeState and date describe the sources: the commit's hash, clean or dirty, and the
	// commit's time, which dates every artefact so that a rebuild gives the same bytes.
	commit    string
	treeState string
	date      time.Time
}

func newRelease(version, repoRoot, out, registry string, insecure bool, caBundle, platforms string) (*release, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	ps, err := parsePlatforms(platforms)
	if err != nil {
		return nil, err
	}
	repoRoot, err = filepath.Abs(repoRoot)
	if err != nil {
		return nil, err
	}
	out, err = filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	r := &release{version: version, repoRoot: repoRoot, out: out, registry: registry, insecure: insecure, caBundle: caBundle, platforms: ps}
	if r.commit, err = r.git("rev-parse", "HEAD"); err != nil {
		return nil, err
	}
	status, err := r.git("status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return nil, err
	}
	r.treeState = "clean"
	if status != "" {
		r.treeState = "dirty"
	}
	unix, err := r.git("log", "-1", "--format=%ct")
	if err != nil {
		return nil, err
	}
	var seconds int64
	if _, err := fmt.Sscan(unix, &seconds); err != nil {
		return nil, fmt.Errorf("the commit's time %q: %w", unix, err)
	}
	r.date = time.Unix(seconds, 0).UTC()
	return r, nil
}

// checkVersion accepts what Helm and users expect of a release: vMAJOR.MINOR.PATCH with an
// optional pre-release, and nothing shortened.
func checkVersion(v string) error {
	if v == "" {
		return fmt.Errorf("a version is needed: --version v0.1.0 (make release VERSION=v0.1.0)")
	}
	if !semver.IsValid(v) || semver.Canonical(v) != v {
		return fmt.Errorf("version %q is not of the form vMAJOR.MINOR.PATCH[-PRERELEASE] (e.g. v0.1.0, v0.2.0-rc.1)", v)
	}
	return nil
}

func (r *release) git(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = r.repoRoot
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s in %s: %w", strings.Join(args, " "), r.repoRoot, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// ldflags stamp the version, as `make build` does for development builds.
func (r *release) ldflags() []string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(semver.MajorMinor(r.version), "v"), ".")
	stamps := [][2]string{
		{"gitVersion", r.version},
		{"gitMajor", major},
		{"gitMinor", minor},
		{"gitCommit", r.commit},
		{"gitTreeState", r.treeState},
		{"buildDate", r.date.Format(time.RFC3339)},
	}
	flags := make([]string, 0, len(stamps))
	for _, s := range stamps {
		flags = append(flags, fmt.Sprintf("-X %s.%s=%s", versionPkg, s[0], s[1]))
	}
	return flags
}

// outMarker marks a folder a release writes, so that a later release may empty it, even when
// the earlier one stopped half-way.
const outMarker = ".sealion-release"

// make writes every artefact and the sums, starting from an empty folder: one an earlier release
// wrote is emptied, any other non-empty folder refused.
func (r *release) make() error {
	entries, err := os.ReadDir(r.out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(r.out, outMarker)); err != nil {
			return fmt.Errorf("%s is not empty and holds no earlier release: choose another --out", r.out)
		}
	}
	if err := os.RemoveAll(r.out); err != nil {
		return err
	}
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.out, outMarker), nil, 0o644); err != nil {
		return err
	}
	imageRef, err := r.serverImage()
	if err != nil {
		return err
	}
	if err := r.installManifests(imageRef); err != nil {
		return err
	}
	if err := r.charts(imageRef); err != nil {
		return err
	}
	if err := r.clis(); err != nil {
		return err
	}
	if err := writeSums(r.out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "release %s (commit %s, %s, for %s) in %s; image %s\n", r.version, r.commit, r.treeState, platformNames(r.platforms), r.out, imageRef)
	return nil
}

// clis cross-compiles the CLI for every platform, named as Pinniped's release names them.
func (r *release) clis() error {
	for _, p := range r.platforms {
		name := "pinniped-cli-" + p.os + "-" + p.arch
		if p.os == "windows" {
			name += ".exe"
		}
		target := gobuild.Target{OS: p.os, Arch: p.arch, LDFlags: r.ldflags()}
		if err := gobuild.Go(r.repoRoot, []string{"GOOS=" + p.os, "GOARCH=" + p.arch}, gobuild.BuildArgs(target, filepath.Join(r.out, name), "sealion.dev/cli/cmd/pinniped")...); err != nil {
			return fmt.Errorf("building %s: %w", name, err)
		}
	}
	return nil
}

// writeSums writes SHA256SUMS, as sha256sum -c reads it, over every other file in dir, in the
// order of their names.
func writeSums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var lines []string
	for _, e := range entries {
		if e.IsDir() || e.Name() == "SHA256SUMS" || e.Name() == outMarker {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		lines = append(lines, sum+"  "+e.Name()+"\n")
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(strings.Join(lines, "")), 0o644)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
