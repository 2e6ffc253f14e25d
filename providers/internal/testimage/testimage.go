// Package testimage builds, for the providers' cluster tests, a tiny image archive in the
// docker-archive format (`docker save` layout) without a container engine: one layer holding the
// static hello program, whose pod proves cluster DNS and Service routing.
package testimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// HelloGreeting is the last line the hello program prints when DNS and the Service worked.
const HelloGreeting = "hello from sealion"

// HelloArchive compiles the hello program and writes an archive of it tagged ref, with
// /hello as its entrypoint; it returns the archive's path in a test temporary directory.
func HelloArchive(t testing.TB, ref string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "hello")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "sealion.dev/providers/internal/testimage/hello")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the hello program: %v\n%s", err, out)
	}
	program, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := tarOf(entry{"hello", 0o755, program})
	if err != nil {
		t.Fatal(err)
	}
	layerSum := sha256.Sum256(layer)
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": []string{"/hello"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(layerSum[:])}},
	})
	if err != nil {
		t.Fatal(err)
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{ref}, "Layers": []string{"layer.tar"}}})
	if err != nil {
		t.Fatal(err)
	}
	archive, err := tarOf(entry{"layer.tar", 0o644, layer}, entry{configName, 0o644, config}, entry{"manifest.json", 0o644, manifest})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hello.tar")
	if err := os.WriteFile(path, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type entry struct {
	name string
	mode int64
	data []byte
}

func tarOf(entries ...entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.data)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
