package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

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
