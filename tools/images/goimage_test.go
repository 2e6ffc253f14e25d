package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"sealion.dev/tools/internal/imagebuild"
)

// A fixture's image has the fixture it packs as its entrypoint, so a pod's args are the
// fixture's flags; it runs as nonroot, and its default tag is named after its archive, the name
// the suites push and load it by.
func TestFixtureImages(t *testing.T) {
	for _, g := range []goImage{dexImageBuild, githubImageBuild, streamerImageBuild} {
		t.Run(g.name, func(t *testing.T) {
			if len(g.bins) != 1 {
				t.Fatalf("%d binaries, want the fixture only", len(g.bins))
			}
			bin := g.bins[0].Name
			if want := "localhost/sealion/" + strings.TrimSuffix(g.archive, ".tar") + ":dev"; g.tag != want {
				t.Errorf("tag %s for archive %s, want %s", g.tag, g.archive, want)
			}
			binDir := t.TempDir()
			if err := os.WriteFile(filepath.Join(binDir, bin), []byte("fixture binary"), 0o755); err != nil {
				t.Fatal(err)
			}
			caBundle := filepath.Join(t.TempDir(), "ca.crt")
			if err := os.WriteFile(caBundle, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			const ref = "localhost/sealion/fixture:test"
			out := filepath.Join(t.TempDir(), "fixture.tar")
			if err := g.image(ref, caBundle, binDir).WriteArchive(out); err != nil {
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
			if want := []string{"/usr/local/bin/" + bin}; !slices.Equal(cf.Config.Entrypoint, want) || len(cf.Config.Cmd) != 0 {
				t.Errorf("entrypoint %q cmd %q, want %q and no cmd", cf.Config.Entrypoint, cf.Config.Cmd, want)
			}
			if cf.Config.User != imagebuild.NonrootUser {
				t.Errorf("user %q, want %s", cf.Config.User, imagebuild.NonrootUser)
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
					if h.Name == "usr/local/bin/"+bin {
						data, _ := io.ReadAll(tr)
						found = h.Mode == 0o755 && string(data) == "fixture binary"
					}
				}
				rc.Close()
			}
			if !found {
				t.Error("the image lacks the fixture, executable, at its entrypoint")
			}
		})
	}
}
