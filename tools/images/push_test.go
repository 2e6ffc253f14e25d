package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"sealion.dev/tools/internal/imagebuild"
)

// testArchive writes a small image tagged ref as a docker-archive tarball, as the server
// command does.
func testArchive(t *testing.T, ref string) string {
	t.Helper()
	layer := imagebuild.NewLayer()
	layer.File("/hello", 0o644, []byte("hello from "+ref))
	archive := filepath.Join(t.TempDir(), "image.tar")
	if err := (imagebuild.Image{Ref: ref, Layers: []*imagebuild.Layer{layer}}).WriteArchive(archive); err != nil {
		t.Fatal(err)
	}
	return archive
}

// TestPushToRegistry pushes to a registry served in this process on loopback, then pulls the
// image back by the digest printed and finds the archive's image, layers included.
func TestPushToRegistry(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	archive := testArchive(t, "localhost/sealion/pinniped-server:dev")

	var out bytes.Buffer
	if err := runPush(context.Background(), []string{"--registry", host + "/team/e2e", archive}, &out); err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(out.String())
	if len(fields) != 2 || fields[0] != "localhost/sealion/pinniped-server:dev" ||
		!strings.HasPrefix(fields[1], host+"/team/e2e/pinniped-server@sha256:") {
		t.Fatalf("printed %q, want the archive's ref and %s/team/e2e/pinniped-server@sha256:...", out.String(), host)
	}

	pushed, err := name.NewDigest(fields[1])
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(pushed)
	if err != nil {
		t.Fatalf("pulling %s back: %v", pushed, err)
	}
	local, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := local.Digest()
	got, _ := pulled.Digest()
	if got != want || pushed.DigestStr() != want.String() {
		t.Errorf("pulled %s by %s, want the archive's %s", got, pushed.DigestStr(), want)
	}
	wantLayers, _ := local.Layers()
	gotLayers, _ := pulled.Layers()
	if len(gotLayers) != len(wantLayers) {
		t.Fatalf("%d layers pulled, want %d", len(gotLayers), len(wantLayers))
	}
	for i := range wantLayers {
		w, _ := wantLayers[i].Digest()
		g, _ := gotLayers[i].Digest()
		if g != w {
			t.Errorf("layer %d: %s, want %s", i, g, w)
		}
	}
	// The tag is pushed too, for people who look.
	if _, err := remote.Head(pushed.Context().Tag("dev")); err != nil {
		t.Errorf("tag dev: %v", err)
	}
}

func TestPushRefusesBadInput(t *testing.T) {
	archive := testArchive(t, "localhost/sealion/pinniped-server:dev")
	ctx := context.Background()
	for _, tc := range []struct {
		name, registry, archive, want string
	}{
		{"no registry", "", archive, "give --registry or set SEALION_REGISTRY"},
		{"registry with a tag", "registry.example.com/team:v1", archive, `registry "registry.example.com/team:v1"`},
		{"missing archive", "registry.example.com/team", filepath.Join(t.TempDir(), "none.tar"), "none.tar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := pushArchive(ctx, tc.archive, tc.registry, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	t.Run("unreachable registry", func(t *testing.T) {
		down := httptest.NewServer(nil)
		down.Close()
		_, _, err := pushArchive(ctx, archive, strings.TrimPrefix(down.URL, "http://")+"/team", nil)
		if err == nil || !strings.Contains(err.Error(), "pushing") {
			t.Errorf("got %v, want a push failure", err)
		}
	})
	if err := os.WriteFile(archive, []byte("not a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pushArchive(ctx, archive, "registry.example.com/team", nil); err == nil || !strings.Contains(err.Error(), "image archive") {
		t.Errorf("corrupt archive: %v", err)
	}
}

// TestServeRegistry: the registry command serves pushes and pulls on the address it prints,
// and stops cleanly when its context ends.
func TestServeRegistry(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serveRegistry(ctx, "127.0.0.1:0", w) }()
	addr, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	addr = strings.TrimSpace(addr)

	archive := testArchive(t, "localhost/sealion/pinniped-server:dev")
	_, ref, err := pushArchive(ctx, archive, addr+"/proof", nil)
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Image(pushed); err != nil {
		t.Errorf("pulling %s: %v", ref, err)
	}

	// A connection opened and never used, as Go's transport leaves when it dials ahead, must not
	// keep the registry from stopping.
	unused, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer unused.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serveRegistry ended with %v", err)
	}
	if _, err := remote.Head(pushed); err == nil {
		t.Error("the registry still answers after its context ended")
	}
	if err := serveRegistry(context.Background(), "not an address", io.Discard); err == nil {
		t.Error("a bad listen address was accepted")
	}
}

// testLayoutArchive writes an OCI layout tarball as a release does: one image index of two
// platforms' images, named ref by the annotation ctr import reads. It returns the index's digest.
func testLayoutArchive(t *testing.T, ref string) (string, v1.Hash) {
	t.Helper()
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range []string{"amd64", "arm64"} {
		layer := imagebuild.NewLayer()
		layer.File("/hello", 0o644, []byte("hello from "+arch))
		archive := filepath.Join(t.TempDir(), "image.tar")
		if err := (imagebuild.Image{Ref: "example.com/x:" + arch, Layers: []*imagebuild.Layer{layer}}).WriteArchive(archive); err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(archive, nil)
		if err != nil {
			t.Fatal(err)
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	dir := t.TempDir()
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendIndex(index, layout.WithAnnotations(map[string]string{containerdNameAnnotation: ref})); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "layout.oci.tar")
	if out, err := exec.Command("tar", "-C", dir, "-cf", archive, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	digest, err := index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return archive, digest
}

// TestPushLayoutToRegistry: the release's server image, an index in an OCI layout, is pushed
// whole, under its digest, and both platforms' images are pulled back.
func TestPushLayoutToRegistry(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	archive, digest := testLayoutArchive(t, "localhost/sealion/pinniped-server:v0.1.0")

	src, pushed, err := pushArchive(context.Background(), archive, host+"/team", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := host + "/team/pinniped-server@" + digest.String(); src != "localhost/sealion/pinniped-server:v0.1.0" || pushed != want {
		t.Fatalf("pushed %s as %s, want the archive's name and %s", src, pushed, want)
	}
	ref, err := name.NewDigest(pushed)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatalf("pulling %s back: %v", ref, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 2 {
		t.Fatalf("pulled an index of %d images, want 2", len(m.Manifests))
	}
	for _, d := range m.Manifests {
		if _, err := remote.Image(ref.Context().Digest(d.Digest.String())); err != nil {
			t.Errorf("pulling the %s image: %v", d.Platform.Architecture, err)
		}
	}
	if _, err := remote.Head(ref.Context().Tag("v0.1.0")); err != nil {
		t.Errorf("tag v0.1.0: %v", err)
	}
}

func TestUntarRefusesEscapes(t *testing.T) {
	for _, entry := range []string{"../evil", "/etc/evil"} {
		archive := filepath.Join(t.TempDir(), "bad.tar")
		f, err := os.Create(archive)
		if err != nil {
			t.Fatal(err)
		}
		tw := tar.NewWriter(f)
		if err := tw.WriteHeader(&tar.Header{Name: entry, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte("x"))
		tw.Close()
		f.Close()
		if err := untar(archive, t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a path inside") {
			t.Errorf("untar with entry %q: %v, want a refusal", entry, err)
		}
	}
}
