package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	securejoin "github.com/cyphar/filepath-securejoin"

	"sealion.dev/providers"
	"sealion.dev/providers/kind"
	"sealion.dev/tools/internal/imagebuild"
	"sealion.dev/tools/internal/kubeadmimages"
)

// kindNodeRevision changes whenever the recipe below changes in a way its inputs do not show,
// so that images built by an older recipe are rebuilt.
const kindNodeRevision = "2"

// nodePackages are the Debian packages of the node: systemd as init, containerd and runc, the
// CNI plugins, and the tools kind's scripts, kubeadm, the kubelet and kube-proxy run.
var nodePackages = []string{
	"systemd", "dbus", "containerd", "runc", "containernetworking-plugins",
	"iptables", "nftables", "iproute2", "ethtool", "util-linux", "mount", "kmod", "libseccomp2",
	"conntrack", "socat", "ca-certificates", "jq", "procps", "bash", "curl", "e2fsprogs", "pigz", "libcap2-bin",
}

// nodeBinaries are the Kubernetes binaries a node runs; kind expects them in /usr/bin.
var nodeBinaries = []string{"kubeadm", "kubelet", "kubectl"}

const (
	debianSuite = "bookworm"
	// nodeStopSignal makes systemd, the node's init, shut down cleanly on `docker stop`.
	nodeStopSignal = "SIGRTMIN+3"
	// nodeWorkDir is where the image is assembled; it must be on a local file system (device
	// nodes, ownership, extended attributes).
	nodeWorkDir = "/var/tmp/sealion/kind-node-build"
)

// kindNode builds a kind node image without a registry: a Debian rootfs made by debootstrap,
// kind's base-image files taken from the kind Go module, our Kubernetes binaries, the cluster
// images preloaded into the node's containerd, and a bridge CNI configuration in place of
// kindnetd (whose image would have to be pulled), which fits single-node clusters.
type kindNode struct {
	version   string
	tag       string
	mirror    string
	binDir    string
	imagesDir string
	cacheDir  string
	force     bool
	// images are the references kubeadm expects; each is the archive images/<component>.tar.
	images []kubeadmimages.Image
	// kindFiles is images/base/files of the kind module.
	kindFiles string
	kindVer   string
}

func runKindNode(args []string) error {
	fl := flag.NewFlagSet("kind-node", flag.ExitOnError)
	version := fl.String("kube-version", providers.DefaultKubernetesVersion, "Kubernetes version; binaries and cluster images must be in the cache (make images)")
	cacheDir := fl.String("cache-dir", defaultCacheDir(), "cache root (default $SEALION_CACHE or ~/.cache/sealion)")
	tag := fl.String("tag", "", "image name (default "+kind.LocalNodeImage("<version>")+")")
	mirror := fl.String("mirror", "http://deb.debian.org/debian", "Debian mirror for debootstrap")
	force := fl.Bool("force", false, "rebuild an up-to-date image, and run debootstrap again instead of using the cached root file system")
	fl.Parse(args)

	n := kindNode{
		version:   *version,
		tag:       *tag,
		mirror:    *mirror,
		binDir:    filepath.Join(*cacheDir, "kubernetes", *version, "bin"),
		imagesDir: filepath.Join(*cacheDir, "images", *version),
		cacheDir:  *cacheDir,
		force:     *force,
	}
	if n.tag == "" {
		n.tag = kind.LocalNodeImage(n.version)
	}
	return n.build(context.Background())
}

func (n *kindNode) build(ctx context.Context) error {
	start := time.Now()
	if os.Geteuid() != 0 {
		return errors.New("building a kind node image needs root (debootstrap, chroot, file ownership)")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		return fmt.Errorf("no Docker engine answers (make docker-engine ALLOW_HOST_CHANGES=true starts one): %w", err)
	}
	if err := n.findInputs(); err != nil {
		return err
	}
	recipe, err := n.recipe()
	if err != nil {
		return err
	}
	if !n.force {
		out, err := exec.Command("docker", "image", "inspect", "--format", "{{index .Config.Labels \""+imagebuild.RecipeLabel+"\"}}", n.tag).Output()
		if err == nil && strings.TrimSpace(string(out)) == recipe {
			fmt.Printf("images: %s is up to date (checked in %s)\n", n.tag, time.Since(start).Round(time.Millisecond))
			return nil
		}
	}

	if err := os.RemoveAll(nodeWorkDir); err != nil {
		return err
	}
	defer os.RemoveAll(nodeWorkDir)
	rootfs := filepath.Join(nodeWorkDir, "rootfs")
	steps := []struct {
		name string
		run  func() error
	}{
		{"Debian root file system", func() error { return n.debianRoot(ctx, rootfs) }},
		{"kind base files and Kubernetes", func() error { return n.assemble(ctx, rootfs) }},
		{"preload cluster images", func() error { return n.preloadImages(ctx, rootfs) }},
		{"docker load", func() error { return n.load(ctx, rootfs, recipe) }},
	}
	for _, s := range steps {
		began := time.Now()
		if err := s.run(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Printf("images: kind node %s: %s done in %s\n", n.version, s.name, time.Since(began).Round(100*time.Millisecond))
	}
	fmt.Printf("images: built %s in %s\n", n.tag, time.Since(start).Round(time.Second))
	return nil
}

// findInputs checks the binaries and archives and locates kind's base-image files.
func (n *kindNode) findInputs() error {
	for _, b := range nodeBinaries {
		if _, err := os.Stat(filepath.Join(n.binDir, b)); err != nil {
			return fmt.Errorf("Kubernetes binary missing (make kube-binaries): %w", err)
		}
	}
	images, err := kubeadmimages.List(filepath.Join(n.binDir, "kubeadm"), n.version)
	if err != nil {
		return err
	}
	for _, img := range images {
		if _, err := os.Stat(n.archive(img)); err != nil {
			return fmt.Errorf("cluster image %s missing (make images): %w", img.Ref, err)
		}
	}
	n.images = images
	// The tools module requires the same kind module as the provider; its files ship in the module.
	out, err := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/kind").Output()
	if err != nil {
		return fmt.Errorf("locating the kind module (run from the tools module): %w", err)
	}
	var mod struct{ Dir, Version string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("locating the kind module: unexpected answer %q", out)
	}
	n.kindFiles, n.kindVer = filepath.Join(mod.Dir, "images", "base", "files"), mod.Version
	return nil
}

func (n *kindNode) archive(img kubeadmimages.Image) string {
	return filepath.Join(n.imagesDir, img.Component+".tar")
}

// recipe digests everything the image is made of: the recipe's revision and parameters, the
// Debian packages asked for, kind's files, and the content of our binaries and image archives.
func (n *kindNode) recipe() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "revision %s\ntag %s\nversion %s\nsuite %s\nmirror %s\npackages %s\nkind %s\npod subnet %s\n",
		kindNodeRevision, n.tag, n.version, debianSuite, n.mirror, strings.Join(nodePackages, ","), n.kindVer, kind.PodSubnet)
	// Each input file under a name that says what it is.
	inputs := map[string]string{}
	for _, b := range nodeBinaries {
		inputs["binary "+b] = filepath.Join(n.binDir, b)
	}
	for _, img := range n.images {
		inputs["image "+img.Ref] = n.archive(img)
	}
	err := filepath.WalkDir(n.kindFiles, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			inputs["kind file "+strings.TrimPrefix(path, n.kindFiles)] = path
		}
		return err
	})
	if err != nil {
		return "", err
	}
	for _, name := range sortedKeys(inputs) {
		sum, err := fileDigest(inputs[name])
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %s\n", name, sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// debianRoot unpacks the cached root file system of the package list, or makes it with
// debootstrap and caches it (about a minute, through the Debian mirror).
func (n *kindNode) debianRoot(ctx context.Context, rootfs string) error {
	key := sha256.Sum256([]byte(debianSuite + "\n" + n.mirror + "\n" + strings.Join(nodePackages, ",")))
	cached := filepath.Join(n.cacheDir, "kind-node", fmt.Sprintf("rootfs-%s-%s.tar", debianSuite, hex.EncodeToString(key[:8])))
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(cached); err == nil && !n.force {
		fmt.Printf("images: kind node: Debian root file system from %s\n", cached)
		return run(ctx, "tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-xpf", cached, "-C", rootfs)
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return errors.New("debootstrap is missing (apt-get install debootstrap, or make docker-engine ALLOW_HOST_CHANGES=true)")
	}
	if err := run(ctx, "debootstrap", "--variant=minbase", "--include="+strings.Join(nodePackages, ","), debianSuite, rootfs, n.mirror); err != nil {
		return err
	}
	// Package downloads and lists are not part of the node.
	for _, glob := range []string{"var/cache/apt/archives/*.deb", "var/lib/apt/lists/*"} {
		matches, _ := filepath.Glob(filepath.Join(rootfs, glob))
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				return err
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		return err
	}
	if err := run(ctx, "tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-cf", cached+".tmp", "-C", rootfs, "."); err != nil {
		return err
	}
	return os.Rename(cached+".tmp", cached)
}

// run runs a command with its output on stderr, as the build's log.
func run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// inRoot resolves p inside rootfs, following the rootfs's symlinks as the node would (/sbin is
// usr/sbin, /var/run is /run), so that nothing is written outside it.
func inRoot(rootfs, p string) (string, error) {
	return securejoin.SecureJoin(rootfs, p)
}

// writeInRoot writes data to p inside rootfs, creating parent directories.
func writeInRoot(rootfs, p string, mode fs.FileMode, data []byte) error {
	dst, err := inRoot(rootfs, p)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, mode); err != nil {
		return err
	}
	return os.Chmod(dst, mode) // WriteFile keeps the mode of an existing file
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
