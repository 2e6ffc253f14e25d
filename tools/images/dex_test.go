package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The Dex image's entrypoint is the fixture it packs, so a pod's args are the fixture's flags.
func TestDexImage(t *testing.T) {
	binDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(binDir, "dex-fixture"), []byte("dex binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	caBundle := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caBundle, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const ref = "localhost/sealion/dex-fixture:test"
	out := filepath.Join(t.TempDir(), "dex.tar")
	if err := dexImage(ref, caBundle, binDir).WriteArchive(out); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/usr/local/bin/dex-fixture"}; !slices.Equal(cf.Config.Entrypoint, want) || len(cf.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want %q and no cmd", cf.Config.Entrypoint, cf.Config.Cmd, want)
	}
	if cf.Config.User != nonrootUser {
		t.Errorf("user %q, want %s", cf.Config.User, nonrootUser)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Name == "usr/local/bin/dex-fixture" {
				data, _ := io.ReadAll(tr)
				found = h.Mode == 0o755 && string(data) == "dex binary"
			}
		}
		rc.Close()
	}
	if !found {
		t.Error("the image lacks the fixture, executable, at its entrypoint")
	}
}
