package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"sealion.dev/tools/internal/imagebuild"
	"sealion.dev/tools/internal/kubeadmimages"
)

// kindContainerdConfig is the shape of kind's images/base/files/etc/containerd/config.toml.
const kindContainerdConfig = `version = 2

[proxy_plugins]
[proxy_plugins."fuse-overlayfs"]
  type = "snapshot"
  address = "/run/containerd-fuse-overlayfs.sock"

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  base_runtime_spec = "/etc/containerd/cri-base.json"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  restrict_oom_score_adj = false
`

func TestContainerdConfig(t *testing.T) {
	t.Parallel()
	out, err := containerdConfig([]byte(kindContainerdConfig), "registry.k8s.io/pause:3.99")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Version      int            `toml:"version"`
		ProxyPlugins map[string]any `toml:"proxy_plugins"`
		Plugins      struct {
			CRI struct {
				SandboxImage        string `toml:"sandbox_image"`
				RestrictOOMScoreAdj bool   `toml:"restrict_oom_score_adj"`
				CNI                 struct {
					BinDir  string `toml:"bin_dir"`
					ConfDir string `toml:"conf_dir"`
				} `toml:"cni"`
				Containerd struct {
					Snapshotter string `toml:"snapshotter"`
					Runtimes    map[string]struct {
						BaseRuntimeSpec string `toml:"base_runtime_spec"`
					} `toml:"runtimes"`
				} `toml:"containerd"`
			} `toml:"io.containerd.grpc.v1.cri"`
		} `toml:"plugins"`
	}
	if _, err := toml.Decode(string(out), &cfg); err != nil {
		t.Fatalf("the result is not TOML: %v\n%s", err, out)
	}
	cri := cfg.Plugins.CRI
	if cfg.Version != 2 || cfg.ProxyPlugins != nil || cri.SandboxImage != "registry.k8s.io/pause:3.99" || !cri.RestrictOOMScoreAdj {
		t.Errorf("config %+v, want version 2, no proxy plugins, kubeadm's pause image, restricted oom_score_adj", cfg)
	}
	if cri.CNI.BinDir != "/usr/lib/cni" || cri.CNI.ConfDir != "/etc/cni/net.d" {
		t.Errorf("CNI %+v, want Debian's plugin directory", cri.CNI)
	}
	// kind's entrypoint edits the snapshotter line with sed, and its image loading reads it.
	if cri.Containerd.Snapshotter != "overlayfs" || !strings.Contains(string(out), `snapshotter = "overlayfs"`) ||
		cri.Containerd.Runtimes["runc"].BaseRuntimeSpec != "/etc/containerd/cri-base.json" {
		t.Errorf("kind's settings were lost:\n%s", out)
	}
	if _, err := containerdConfig([]byte("version = 2\n"), "p"); err == nil {
		t.Error("a config without the CRI plugin was accepted")
	}
}

func TestCRIBaseSpec(t *testing.T) {
	t.Parallel()
	spec := `{"ociVersion":"1.1.0","process":{"user":{"uid":0},"rlimits":[{"type":"RLIMIT_NOFILE","hard":1024,"soft":1024}]},` +
		`"linux":{"resources":{"memory":{"limit":9223372036854775807}}}}`
	out, err := criBaseSpec([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Process map[string]any `json:"process"`
		Hooks   struct {
			CreateContainer []struct{ Path string } `json:"createContainer"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Process["rlimits"]; ok {
		t.Error("rlimits kept")
	}
	if len(got.Hooks.CreateContainer) != 1 || got.Hooks.CreateContainer[0].Path != "/kind/bin/mount-product-files.sh" {
		t.Errorf("hooks %+v, want kind's product files hook", got.Hooks)
	}
	if !bytes.Contains(out, []byte("9223372036854775807")) {
		t.Errorf("a 64-bit limit lost precision:\n%s", out)
	}
}

func TestBridgeConflistIsJSONForThePodSubnet(t *testing.T) {
	t.Parallel()
	var conf struct {
		Plugins []struct {
			Type string
			IPAM struct {
				Ranges [][]struct{ Subnet string }
			}
		}
	}
	if err := json.Unmarshal([]byte(bridgeConflist("10.244.0.0/16")), &conf); err != nil {
		t.Fatal(err)
	}
	if len(conf.Plugins) == 0 || conf.Plugins[0].Type != "bridge" || conf.Plugins[0].IPAM.Ranges[0][0].Subnet != "10.244.0.0/16" {
		t.Errorf("conflist %+v", conf)
	}
}

func TestDockerArchiveLoadsAsTheTaggedImage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	layer := filepath.Join(dir, "layer.tar")
	layerData, err := tarOf(map[string]string{"etc/hostname": "node\n"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(layer, layerData, 0o644); err != nil {
		t.Fatal(err)
	}
	diffID, err := fileDigest(layer)
	if err != nil {
		t.Fatal(err)
	}
	config, err := nodeImageConfig("sha256:"+diffID, "recipe-1")
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	const tag = "localhost/sealion/kind-node:v1.2.3"
	if err := writeDockerArchive(&archive, tag, layer, config); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "image.tar")
	if err := os.WriteFile(path, archive.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.StopSignal != "SIGRTMIN+3" || cf.Config.Labels[imagebuild.RecipeLabel] != "recipe-1" ||
		strings.Join(cf.Config.Entrypoint, " ") != "/usr/local/bin/entrypoint /sbin/init" || cf.RootFS.DiffIDs[0].Hex != diffID {
		t.Errorf("config %+v", cf)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %v, %v", layers, err)
	}
	if got, err := layers[0].DiffID(); err != nil || got.Hex != diffID {
		t.Errorf("layer digest %v, %v; want %s", got, err, diffID)
	}
}

func TestInRootStaysInside(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// Debian's /var/run is an absolute symlink, which on the build host would lead to its own /run.
	if err := os.MkdirAll(filepath.Join(root, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "var"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/run", filepath.Join(root, "var", "run")); err != nil {
		t.Fatal(err)
	}
	if err := writeInRoot(root, "/var/run/x", 0o644, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "run", "x")); err != nil {
		t.Errorf("the write did not land in the root's /run: %v", err)
	}
	if err := symlinkInRoot(root, "/var/run/init", "/usr/lib/systemd/systemd"); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(root, "run", "init")); err != nil || target != "/usr/lib/systemd/systemd" {
		t.Errorf("symlink: %q, %v", target, err)
	}
}

func TestRecipeFollowsEveryInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := kindNode{
		version: "v1.2.3", tag: "t", mirror: "m",
		binDir: filepath.Join(dir, "bin"), imagesDir: filepath.Join(dir, "images"), kindFiles: filepath.Join(dir, "kind"),
		images: []kubeadmimages.Image{{Ref: "registry.k8s.io/pause:3.10", Component: "pause", Tag: "3.10"}},
	}
	files := map[string]string{filepath.Join(n.imagesDir, "pause.tar"): "pause", filepath.Join(n.kindFiles, "kind", "bin", "x.sh"): "x"}
	for _, b := range nodeBinaries {
		files[filepath.Join(n.binDir, b)] = b
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	first, err := n.recipe()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := n.recipe(); again != first {
		t.Error("the recipe is not stable")
	}
	seen := map[string]bool{first: true}
	for path := range files {
		if err := os.WriteFile(path, []byte("changed"), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := n.recipe()
		if err != nil {
			t.Fatal(err)
		}
		if seen[r] {
			t.Errorf("changing %s did not change the recipe", path)
		}
		seen[r] = true
	}
	n.mirror = "other"
	if r, _ := n.recipe(); seen[r] {
		t.Error("changing the mirror did not change the recipe")
	}
}

// tarOf writes a tarball of regular files, path -> content.
func tarOf(files map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for path, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: path, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			return nil, err
		}
	}
	err := tw.Close()
	return buf.Bytes(), err
}
