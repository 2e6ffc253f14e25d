package serverimage

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"sealion.dev/tools/internal/gobuild"
)

func TestServerImage(t *testing.T) {
	binDir := t.TempDir()
	bins := []gobuild.Binary{{Package: "example.com/a", Name: "server-a"}, {Package: "example.com/b", Name: "server-b"}}
	for _, b := range bins {
		if err := os.WriteFile(filepath.Join(binDir, b.Name), []byte("binary "+b.Name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	caBundle := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caBundle, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const ref = "localhost/sealion/pinniped-server:test"
	out := filepath.Join(t.TempDir(), "server.tar")
	if err := Image(ref, caBundle, binDir, runtime.GOARCH, bins).WriteArchive(out); err != nil {
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
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cf.Config.User)
	}
	files := map[string]*tar.Header{}
	contents := map[string]string{}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
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
			data, _ := io.ReadAll(tr)
			files[h.Name], contents[h.Name] = h, string(data)
		}
		rc.Close()
	}
	for _, b := range bins {
		h := files["usr/local/bin/"+b.Name]
		if h == nil || h.Mode != 0o755 || contents[h.Name] != "binary "+b.Name {
			t.Errorf("%s missing or wrong: %+v", b.Name, h)
		}
	}
	if !strings.Contains(contents["etc/passwd"], "nonroot:x:65532:65532:") || !strings.Contains(contents["etc/group"], "nonroot:x:65532:") {
		t.Errorf("nonroot user missing: passwd %q group %q", contents["etc/passwd"], contents["etc/group"])
	}
	if contents["etc/ssl/certs/ca-certificates.crt"] != "-----BEGIN CERTIFICATE-----\n" {
		t.Error("CA bundle not copied")
	}
	if h := files["home/nonroot/"]; h == nil || h.Uid != 65532 || h.Gid != 65532 {
		t.Errorf("home of nonroot = %+v", h)
	}
	for _, shell := range []string{"bin/sh", "usr/bin/sh"} {
		if files[shell] != nil {
			t.Errorf("image has a shell at %s", shell)
		}
	}
}
