package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"sealion.dev/tools/internal/imagebuild"
)

// preloadImages imports the cluster image archives into the node's containerd store, as kind's
// node-image build does, by running the node's own containerd on the root file system's store.
// Nothing is unpacked: the node's CRI unpacks an image when a container first uses it.
func (n *kindNode) preloadImages(ctx context.Context, rootfs string) error {
	store, err := inRoot(rootfs, "/var/lib/containerd")
	if err != nil {
		return err
	}
	state := filepath.Join(nodeWorkDir, "containerd-state")
	socket := filepath.Join(nodeWorkDir, "containerd.sock")
	config := filepath.Join(nodeWorkDir, "containerd.toml")
	for _, d := range []string{store, state} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return err
		}
	}
	// Only the content and image stores: no CRI, and no plugin writing outside root and state.
	cfg := fmt.Sprintf("version = 2\nroot = %q\nstate = %q\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\", \"io.containerd.internal.v1.opt\"]\n[grpc]\n  address = %q\n",
		store, state, socket)
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(nodeWorkDir, "containerd.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	daemon := exec.Command(filepath.Join(rootfs, "usr/bin/containerd"), "--config", config)
	daemon.Stdout, daemon.Stderr = log, log
	daemon.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := daemon.Start(); err != nil {
		return fmt.Errorf("starting the node's containerd: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- daemon.Wait() }()
	defer func() {
		_ = daemon.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = daemon.Process.Kill()
			<-exited
		}
		_ = os.RemoveAll(filepath.Join(store, "tmpmounts"))
	}()

	ctr := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(rootfs, "usr/bin/ctr"), append([]string{"--address", socket, "--namespace", "k8s.io"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := ctr("version"); err == nil {
			break
		} else if time.Now().After(deadline) {
			return fmt.Errorf("the node's containerd did not answer within 30s (log in %s): %w", log.Name(), err)
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the node's containerd exited: %v (log in %s)", err, log.Name())
		case <-time.After(200 * time.Millisecond):
		}
	}
	for _, img := range n.images {
		if _, err := ctr("images", "import", "--no-unpack", "--all-platforms", n.archive(img)); err != nil {
			return err
		}
	}
	out, err := ctr("images", "list", "--quiet")
	if err != nil {
		return err
	}
	present := strings.Fields(string(out))
	for _, img := range n.images {
		if !slices.Contains(present, img.Ref) {
			return fmt.Errorf("%s not in the node's store after the import (it has %s)", img.Ref, strings.Join(present, ", "))
		}
	}
	return nil
}

// load packs the root file system as the image's single layer and hands Docker an image
// archive (`docker save` layout) with kind's runtime configuration: docker import cannot set
// the stop signal, which systemd needs. The image this replaces under the tag is removed.
func (n *kindNode) load(ctx context.Context, rootfs, recipe string) error {
	layer := filepath.Join(nodeWorkDir, "layer.tar")
	// Docker mounts /dev, /proc and /sys; their content in the root file system is not wanted.
	if err := run(ctx, "tar", "--numeric-owner", "--xattrs", "--xattrs-include=security.capability",
		"--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*", "-cf", layer, "-C", rootfs, "."); err != nil {
		return err
	}
	diffID, err := fileDigest(layer)
	if err != nil {
		return err
	}
	config, err := nodeImageConfig("sha256:"+diffID, recipe)
	if err != nil {
		return err
	}
	previous, _ := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", n.tag).Output()

	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeDockerArchive(pw, n.tag, layer, config)) }()
	var out bytes.Buffer
	load := exec.CommandContext(ctx, "docker", "load")
	load.Stdin, load.Stdout, load.Stderr = pr, &out, &out
	err = load.Run()
	pr.Close()
	if err != nil {
		return fmt.Errorf("docker load: %w: %s", err, strings.TrimSpace(out.String()))
	}
	if !strings.Contains(out.String(), "Loaded image: "+n.tag) {
		return fmt.Errorf("docker load did not report %s: %s", n.tag, strings.TrimSpace(out.String()))
	}
	if old := strings.TrimSpace(string(previous)); old != "" {
		if now, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", n.tag).Output(); err == nil && strings.TrimSpace(string(now)) != old {
			// Still used by a container of an older cluster: then it stays, untagged.
			_ = exec.Command("docker", "image", "rm", old).Run()
		}
	}
	return nil
}

// nodeImageConfig is the image configuration of a kind node: kind's entrypoint starting
// systemd, which stops on SIGRTMIN+3 and must know it runs in a container.
func nodeImageConfig(diffID, recipe string) ([]byte, error) {
	return json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      imagebuild.Epoch.Format(time.RFC3339),
		"config": map[string]any{
			"Env":        []string{"container=docker", imagebuild.DefaultPath},
			"Entrypoint": []string{"/usr/local/bin/entrypoint", "/sbin/init"},
			"StopSignal": nodeStopSignal,
			"Labels":     map[string]string{imagebuild.RecipeLabel: recipe},
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		"history": []map[string]any{{"created": imagebuild.Epoch.Format(time.RFC3339), "created_by": "sealion.dev/tools/images kind-node"}},
	})
}

// writeDockerArchive writes the `docker save` layout of a one-layer image: the layer tarball,
// the configuration named by its digest, and manifest.json naming the tag.
func writeDockerArchive(w io.Writer, tag, layerPath string, config []byte) error {
	layer, err := os.Open(layerPath)
	if err != nil {
		return err
	}
	defer layer.Close()
	info, err := layer.Stat()
	if err != nil {
		return err
	}
	sum := sha256.Sum256(config)
	configName := hex.EncodeToString(sum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{tag}, "Layers": []string{"layer.tar"}}})
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	tw := tar.NewWriter(bw)
	if err := tw.WriteHeader(&tar.Header{Name: "layer.tar", Mode: 0o644, Size: info.Size(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, layer); err != nil {
		return fmt.Errorf("copying the layer: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{configName, config}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}
