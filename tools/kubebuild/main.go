// Command kubebuild builds the Kubernetes binaries (and etcd) of one version from source, through
// the Go module proxy, into a cache outside the repository keyed by version.
//
// Kubernetes' staging modules are published at v0.MINOR.PATCH while k8s.io/kubernetes itself asks
// for v0.0.0, so the build happens in a generated helper module that pins every staging module with
// a replace directive. A warm cache is a no-op: the binaries and a stamp file are checked first.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"

	"sealion.dev/providers"
	"sealion.dev/tools/internal/kubeadmimages"
)

// kubeCommands are the binaries built from k8s.io/kubernetes/cmd.
var kubeCommands = []string{
	"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubeadm", "kube-proxy", "kubectl",
}

func main() {
	version := flag.String("version", providers.DefaultKubernetesVersion, "Kubernetes version to build")
	etcdVersion := flag.String("etcd-version", "", "etcd version to build (default: the patch of etcdPatches for the etcd minor this version's kubeadm expects)")
	cacheDir := flag.String("cache-dir", defaultCacheDir(), "cache root; binaries go to <cache-dir>/kubernetes/<version>/bin")
	printDir := flag.Bool("print-bin-dir", false, "only print the binary directory for the version")
	flag.Parse()

	b := builder{version: *version, etcdVersion: *etcdVersion, root: filepath.Join(*cacheDir, "kubernetes", *version)}
	if *printDir {
		fmt.Println(b.binDir())
		return
	}
	if err := b.run(); err != nil {
		fmt.Fprintf(os.Stderr, "kubebuild: %v\n", err)
		if errors.Is(err, errCannotBuildHere) {
			os.Exit(exitCannotBuildHere)
		}
		os.Exit(1)
	}
}

// exitCannotBuildHere is the exit status when the version cannot be built on this machine at
// all (not a failure to retry): the matrix reports its cells as unable to run here.
const exitCannotBuildHere = 3

var errCannotBuildHere = errors.New("cannot be built here")

// defaultCacheDir honours SEALION_CACHE, then the user cache directory.
func defaultCacheDir() string {
	if d := os.Getenv("SEALION_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "sealion")
	}
	return filepath.Join(os.TempDir(), "sealion-cache")
}

type builder struct {
	version, etcdVersion string
	root                 string
}

func (b builder) binDir() string    { return filepath.Join(b.root, "bin") }
func (b builder) stampFile() string { return filepath.Join(b.binDir(), ".complete") }

// etcdPatches is the etcd built for each etcd minor a kubeadm may expect (`kubeadm config images
// list` names it): the flags kubeadm passes etcd change between minors (kubeadm 1.34 passes
// --feature-gates, which etcd 3.5 refuses), while any patch of the minor serves.
var etcdPatches = map[string]string{"3.5": "v3.5.35", "3.6": "v3.6.5", "3.7": "v3.7.3"}

// stamp records what a finished build holds, so a changed etcd version is noticed.
func (b builder) stamp() string { return b.version + " etcd " + b.etcdVersion + "\n" }

func (b builder) run() error {
	if !semver.IsValid(b.version) {
		return fmt.Errorf("invalid Kubernetes version %q (want vMAJOR.MINOR.PATCH)", b.version)
	}
	stamp, _ := os.ReadFile(b.stampFile())
	// The Kubernetes binaries of an earlier build stay when only etcd changes.
	kubeBuilt := strings.HasPrefix(string(stamp), b.version+" ") && b.kubePresent()
	if kubeBuilt {
		if err := b.resolveEtcd(); err != nil {
			return err
		}
		if string(stamp) == b.stamp() && b.allPresent() {
			fmt.Printf("kubebuild: %s is up to date in %s\n", b.version, b.binDir())
			return nil
		}
	}
	if err := os.MkdirAll(b.binDir(), 0o755); err != nil {
		return err
	}
	start := time.Now()
	if !kubeBuilt {
		if err := b.buildKubernetes(); err != nil {
			return err
		}
		if err := b.resolveEtcd(); err != nil {
			return err
		}
	}
	if err := b.buildEtcd(); err != nil {
		return err
	}
	if err := os.WriteFile(b.stampFile(), []byte(b.stamp()), 0o644); err != nil {
		return err
	}
	fmt.Printf("kubebuild: built %s and etcd %s in %s into %s\n", b.version, b.etcdVersion, time.Since(start).Round(time.Second), b.binDir())
	return nil
}

func (b builder) allPresent() bool {
	_, err := os.Stat(filepath.Join(b.binDir(), "etcd"))
	return err == nil && b.kubePresent()
}

func (b builder) kubePresent() bool {
	for _, name := range kubeCommands {
		if _, err := os.Stat(filepath.Join(b.binDir(), name)); err != nil {
			return false
		}
	}
	return true
}

// resolveEtcd sets the etcd version, unless given, from the one the built kubeadm expects.
func (b *builder) resolveEtcd() error {
	if b.etcdVersion != "" {
		return nil
	}
	images, err := kubeadmimages.List(filepath.Join(b.binDir(), "kubeadm"), b.version)
	if err != nil {
		return err
	}
	for _, img := range images {
		if img.Component != "etcd" {
			continue
		}
		// Tags look like 3.6.5-0: the etcd version, then the image's own revision.
		minor := semver.MajorMinor("v" + strings.SplitN(img.Tag, "-", 2)[0])
		patch, ok := etcdPatches[strings.TrimPrefix(minor, "v")]
		if !ok {
			return fmt.Errorf("kubeadm %s expects etcd %s, a minor kubebuild has no patch for: add one to etcdPatches or pass --etcd-version", b.version, img.Tag)
		}
		b.etcdVersion = patch
		return nil
	}
	return fmt.Errorf("kubeadm %s lists no etcd image", b.version)
}

func (b builder) buildKubernetes() error {
	dir := filepath.Join(b.root, "src", "kubernetes")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gomod, err := helperGoMod(b.version)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), gomod, 0o644); err != nil {
		return err
	}
	var pkgs []string
	for _, c := range kubeCommands {
		pkgs = append(pkgs, "k8s.io/kubernetes/cmd/"+c)
	}
	var stderr bytes.Buffer
	if err := goCmdTee(dir, &stderr, append([]string{"get"}, withVersion(pkgs, b.version)...)...); err != nil {
		if missing := unservedModule(stderr.String()); missing != "" {
			return fmt.Errorf("%w: Kubernetes %s needs %s, which the Go module proxy does not serve", errCannotBuildHere, b.version, missing)
		}
		return fmt.Errorf("resolving Kubernetes %s modules: %w", b.version, err)
	}
	args := []string{"build", "-tags=selinux,notest,grpcnotrace", "-trimpath", "-ldflags", versionLDFlags(b.version), "-o", b.binDir() + "/"}
	if err := goCmd(dir, append(args, pkgs...)...); err != nil {
		return fmt.Errorf("building Kubernetes %s: %w", b.version, err)
	}
	return nil
}

func (b builder) buildEtcd() error {
	dir := filepath.Join(b.root, "src", "etcd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module kubebuild.local/etcd\n\ngo 1.23\n"), 0o644); err != nil {
		return err
	}
	if err := goCmd(dir, "get", "go.etcd.io/etcd/server/v3@"+b.etcdVersion); err != nil {
		return fmt.Errorf("resolving etcd %s: %w", b.etcdVersion, err)
	}
	// The etcd server's main package is the module root of go.etcd.io/etcd/server/v3.
	if err := goCmd(dir, "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(b.binDir(), "etcd"), "go.etcd.io/etcd/server/v3"); err != nil {
		return fmt.Errorf("building etcd %s: %w", b.etcdVersion, err)
	}
	return nil
}

// helperGoMod writes a module that requires k8s.io/kubernetes at version and replaces every staging
// module it lists with the matching v0.MINOR.PATCH release.
func helperGoMod(version string) ([]byte, error) {
	upstream, err := downloadGoMod("k8s.io/kubernetes", version)
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse("go.mod", upstream, nil)
	if err != nil {
		return nil, fmt.Errorf("parsing k8s.io/kubernetes %s go.mod: %w", version, err)
	}
	staging := "v0" + strings.TrimPrefix(version, "v1")
	out := &modfile.File{}
	out.AddModuleStmt("kubebuild.local/kubernetes")
	if err := out.AddGoStmt(f.Go.Version); err != nil {
		return nil, err
	}
	if err := out.AddRequire("k8s.io/kubernetes", version); err != nil {
		return nil, err
	}
	for _, r := range f.Replace {
		if !strings.HasPrefix(r.New.Path, "./staging/") {
			continue
		}
		if err := out.AddReplace(r.Old.Path, "", r.Old.Path, staging); err != nil {
			return nil, err
		}
	}
	if len(out.Replace) == 0 {
		return nil, fmt.Errorf("k8s.io/kubernetes %s go.mod lists no staging replacements", version)
	}
	out.Cleanup()
	return out.Format()
}

// downloadGoMod fetches a module's go.mod through the Go toolchain, so GOPROXY and GOFLAGS apply.
func downloadGoMod(path, version string) ([]byte, error) {
	var stdout bytes.Buffer
	cmd := exec.Command("go", "mod", "download", "-json", path+"@"+version)
	cmd.Dir = os.TempDir()
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	cmd.Env = append(os.Environ(), "GO111MODULE=on")
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go mod download %s@%s: %w", path, version, err)
	}
	var info struct{ GoMod, Error string }
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil {
		return nil, err
	}
	if info.Error != "" {
		return nil, errors.New(info.Error)
	}
	return os.ReadFile(info.GoMod)
}

// versionLDFlags stamps the version that kubeadm, kubelet and skew checks read.
func versionLDFlags(version string) string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(semver.MajorMinor(version), "v"), ".")
	flags := []string{"-s", "-w"}
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X", p+".gitVersion="+version, "-X", p+".gitMajor="+major, "-X", p+".gitMinor="+minor,
			"-X", p+".gitTreeState=clean", "-X", p+".gitCommit=0000000000000000000000000000000000000000",
			"-X", p+".buildDate=1970-01-01T00:00:00Z")
	}
	return strings.Join(flags, " ")
}

func withVersion(pkgs []string, version string) []string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = p + "@" + version
	}
	return out
}

func goCmd(dir string, args ...string) error { return goCmdTee(dir, nil, args...) }

// goCmdTee is goCmd that also copies the command's stderr to tee, when not nil.
func goCmdTee(dir string, tee io.Writer, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if tee != nil {
		cmd.Stderr = io.MultiWriter(os.Stderr, tee)
	}
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	fmt.Printf("kubebuild: (cd %s && go %s)\n", dir, strings.Join(args, " "))
	return cmd.Run()
}

// unservedRE matches the go command's report of a module version the proxy refuses, e.g.
// "k8s.io/cri-client@v0.32.13: reading https://proxy.golang.org/...: 403 Forbidden".
var unservedRE = regexp.MustCompile(`([\w.\-/]+@v[\w.\-+]+): (?:verifying module: [^:]+: )?reading https?://\S+: (?:403|404|410)`)

// unservedModule returns the first module version the go command's stderr says the proxy does
// not serve, or "".
func unservedModule(stderr string) string {
	if m := unservedRE.FindStringSubmatch(stderr); m != nil {
		return m[1]
	}
	return ""
}
