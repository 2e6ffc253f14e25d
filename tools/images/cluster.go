package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"sealion.dev/providers"
	"sealion.dev/tools/internal/debpkg"
	"sealion.dev/tools/internal/elfdeps"
	"sealion.dev/tools/internal/gobuild"
	"sealion.dev/tools/internal/imagebuild"
	"sealion.dev/tools/internal/kubeadmimages"
)

// Our own sandbox program and the iptables backend selector of the kube-proxy image, built from
// the tools module.
var (
	pauseBinary   = gobuild.Binary{Package: "sealion.dev/tools/images/pause", Name: "pause"}
	wrapperBinary = gobuild.Binary{Package: "sealion.dev/tools/images/iptables-wrapper", Name: "iptables-wrapper"}
)

// iptablesCommands are the commands kube-proxy runs in iptables mode.
var iptablesCommands = []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"}

// kubeProxyPackages are the Debian packages whose programs the kube-proxy image carries: both
// iptables backends, conntrack (debugging stale flows) and nft (the nftables proxy mode). They are
// taken from Debian, never from the build host, so the image does not depend on what it has.
var kubeProxyPackages = []string{"iptables", "conntrack", "nftables"}

// kubeProxyTools are the programs of kubeProxyPackages copied with their libraries.
var kubeProxyTools = []string{"/usr/sbin/xtables-nft-multi", "/usr/sbin/xtables-legacy-multi", "/usr/sbin/conntrack", "/usr/sbin/nft"}

type cluster struct {
	version  string
	binDir   string // the cached Kubernetes binaries
	outDir   string
	toolsBin string // pause and iptables-wrapper
	cacheDir string
	caBundle string
}

func runCluster(args []string) error {
	fl := flag.NewFlagSet("cluster", flag.ExitOnError)
	version := fl.String("kube-version", providers.DefaultKubernetesVersion, "Kubernetes version; its binaries must be in <cache-dir>/kubernetes/<version>/bin (make kube-binaries)")
	cacheDir := fl.String("cache-dir", defaultCacheDir(), "cache root (default $SEALION_CACHE or ~/.cache/sealion)")
	caBundle := fl.String("ca-bundle", defaultCABundle, "CA bundle copied to /etc/ssl/certs/ca-certificates.crt")
	force := fl.Bool("force", false, "rebuild archives that are up to date")
	fl.Parse(args)

	c := cluster{
		version:  *version,
		binDir:   filepath.Join(*cacheDir, "kubernetes", *version, "bin"),
		outDir:   filepath.Join(*cacheDir, "images", *version),
		toolsBin: filepath.Join(*cacheDir, "images", "bin"),
		cacheDir: *cacheDir,
		caBundle: *caBundle,
	}
	kubeadm := filepath.Join(c.binDir, "kubeadm")
	if _, err := os.Stat(kubeadm); err != nil {
		return fmt.Errorf("no kubeadm for %s (run make kube-binaries): %w", c.version, err)
	}
	images, err := kubeadmimages.List(kubeadm, c.version)
	if err != nil {
		return err
	}
	if err := gobuild.Build(".", c.toolsBin, gobuild.Target{OS: "linux", Arch: runtime.GOARCH}, []gobuild.Binary{pauseBinary, wrapperBinary}); err != nil {
		return fmt.Errorf("%w (run from the tools module)", err)
	}
	for _, want := range images {
		img, err := c.recipe(want)
		if err != nil {
			return fmt.Errorf("image %s: %w", want.Ref, err)
		}
		out := filepath.Join(c.outDir, want.Component+".tar")
		if err := writeIfStale(img, out, *force); err != nil {
			return err
		}
	}
	return nil
}

// writeIfStale writes img to out unless out is up to date, and says which happened.
func writeIfStale(img imagebuild.Image, out string, force bool) error {
	if !force {
		ok, err := img.UpToDate(out)
		if err != nil {
			return fmt.Errorf("checking %s: %w", out, err)
		}
		if ok {
			fmt.Printf("images: %s is up to date (%s)\n", img.Ref, out)
			return nil
		}
	}
	start := time.Now()
	if err := img.WriteArchive(out); err != nil {
		return err
	}
	fi, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Printf("images: wrote %s to %s (%.1f MB) in %s\n", img.Ref, out, float64(fi.Size())/1e6, time.Since(start).Round(time.Millisecond))
	return nil
}

// recipe describes the image kubeadm expects under want.Ref.
func (c cluster) recipe(want kubeadmimages.Image) (imagebuild.Image, error) {
	img := imagebuild.Image{
		Ref:    want.Ref,
		Config: imagebuild.Config{Env: []string{imagebuild.DefaultPath}},
	}
	base := imagebuild.Base(c.caBundle)
	switch want.Component {
	case "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd":
		bin := "/usr/local/bin/" + want.Component
		img.Layers = []*imagebuild.Layer{base, imagebuild.NewLayer().CopyFile(bin, filepath.Join(c.binDir, want.Component))}
		img.Config.Entrypoint = []string{bin}
	case "kube-proxy":
		layer, err := c.kubeProxyLayer()
		if err != nil {
			return img, err
		}
		img.Layers = []*imagebuild.Layer{base, layer}
		img.Config.Entrypoint = []string{"/usr/local/bin/kube-proxy"}
	case "pause":
		img.Layers = []*imagebuild.Layer{base, imagebuild.NewLayer().CopyFile("/pause", filepath.Join(c.toolsBin, pauseBinary.Name))}
		img.Config.Entrypoint = []string{"/pause"}
	case "coredns":
		bin, err := buildCoreDNS(c.cacheDir, want.Tag)
		if err != nil {
			return img, err
		}
		img.Layers = []*imagebuild.Layer{base, imagebuild.NewLayer().CopyFile("/coredns", bin)}
		img.Config.Entrypoint = []string{"/coredns"}
	default:
		return img, fmt.Errorf("no recipe for component %q", want.Component)
	}
	return img, nil
}

// kubeProxyLayer packs kube-proxy with iptables from Debian's packages (both backends, their
// extensions and shared libraries). The iptables command names lead to iptables-wrapper, which
// picks the backend the node uses.
func (c cluster) kubeProxyLayer() (*imagebuild.Layer, error) {
	root, err := debpkg.Cache{Dir: filepath.Join(c.cacheDir, "debian")}.Unpack(context.Background(), kubeProxyPackages...)
	if err != nil {
		return nil, fmt.Errorf("kube-proxy's iptables: %w", err)
	}
	extDir, err := xtablesDir(root)
	if err != nil {
		return nil, err
	}
	extensions, err := filepath.Glob(filepath.Join(root, extDir, "*.so"))
	if err != nil {
		return nil, err
	}
	elfs := append([]string(nil), kubeProxyTools...)
	for _, e := range extensions {
		elfs = append(elfs, path.Join(extDir, filepath.Base(e)))
	}
	libs, err := elfdeps.Needed(root, elfs, elfdeps.DefaultDirs())
	if err != nil {
		return nil, fmt.Errorf("finding the libraries of the iptables tools: %w", err)
	}
	l := imagebuild.NewLayer().
		CopyFile("/usr/local/bin/kube-proxy", filepath.Join(c.binDir, "kube-proxy")).
		CopyFile("/usr/sbin/iptables-wrapper", filepath.Join(c.toolsBin, wrapperBinary.Name)).
		RootPath(root, extDir).
		Dir("/run", 0o755)
	for _, p := range append(append([]string(nil), kubeProxyTools...), libs...) {
		l.RootPath(root, p)
	}
	for _, cmd := range iptablesCommands {
		l.Symlink("/usr/sbin/"+cmd, "iptables-wrapper")
		for _, backend := range []string{"nft", "legacy"} {
			l.Symlink("/usr/sbin/"+backendCommand(cmd, backend), "xtables-"+backend+"-multi")
		}
	}
	return l, nil
}

// backendCommand names a command of one backend: iptables-save -> iptables-nft-save.
func backendCommand(cmd, backend string) string {
	for _, family := range []string{"ip6tables", "iptables"} {
		if rest, ok := strings.CutPrefix(cmd, family); ok {
			return family + "-" + backend + rest
		}
	}
	return cmd
}

// xtablesDir finds the directory of iptables extensions in root, next to the libraries.
func xtablesDir(root string) (string, error) {
	for _, d := range elfdeps.DefaultDirs() {
		dir := path.Join(d, "xtables")
		if fi, err := os.Stat(filepath.Join(root, dir)); err == nil && fi.IsDir() {
			return dir, nil
		}
	}
	return "", fmt.Errorf("no iptables extension directory (xtables) in %s", root)
}

// buildCoreDNS builds CoreDNS at version from its Go module, through the module proxy, in a helper
// module under the cache; a finished build is reused.
func buildCoreDNS(cacheDir, version string) (string, error) {
	root := filepath.Join(cacheDir, "coredns", version)
	bin := filepath.Join(root, "bin", "coredns")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	src := filepath.Join(root, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module sealion.local/coredns\n\ngo 1.23\n"), 0o644); err != nil {
		return "", err
	}
	env := []string{"GOFLAGS=-mod=mod", "GOOS=linux", "GOARCH=" + runtime.GOARCH}
	if err := gobuild.Go(src, env, "get", "github.com/coredns/coredns@"+version); err != nil {
		return "", fmt.Errorf("resolving CoreDNS %s: %w", version, err)
	}
	// Build next to the final name and rename, so an interrupted build is never taken as finished.
	args := gobuild.BuildArgs(gobuild.Target{OS: "linux", Arch: runtime.GOARCH}, bin+".tmp", "github.com/coredns/coredns")
	if err := gobuild.Go(src, env, args...); err != nil {
		return "", fmt.Errorf("building CoreDNS %s: %w", version, err)
	}
	return bin, os.Rename(bin+".tmp", bin)
}
