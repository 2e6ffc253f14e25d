package imagebuild

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// tarEntry is what a test checks of one file in a layer.
type tarEntry struct {
	typ      byte
	mode     int64
	uid, gid int
	content  string
	link     string
}

func readLayer(t *testing.T, l v1.Layer) map[string]tarEntry {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]tarEntry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(Epoch) {
			t.Errorf("%s: mtime %v, want %v", h.Name, h.ModTime, Epoch)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = tarEntry{typ: h.Typeflag, mode: h.Mode, uid: h.Uid, gid: h.Gid, content: string(data), link: h.Linkname}
	}
}

// sampleImage builds an image from a temporary directory holding a program and a symlink chain.
func sampleImage(t *testing.T) (Image, string) {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "prog"), []byte("#!program"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "real", "lib"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "real", "lib", "libx.so"), []byte("library"), 0o644))
	must(t, os.Symlink("real", filepath.Join(dir, "alias")))

	app := NewLayer().
		CopyFile("/usr/local/bin/prog", filepath.Join(dir, "prog")).
		HostPath(filepath.Join(dir, "alias", "lib", "libx.so")).
		Symlink("/bin", "usr/bin").
		OwnedDir("/home/app", 0o700, 1000, 1000).
		Dir("/tmp", 0o777|fs.ModeSticky)
	base := NewLayer().File("/etc/passwd", 0o644, []byte("root:x:0:0::/:/sbin/nologin\n"))
	return Image{
		Ref:    "localhost/test/sample:v1",
		Layers: []*Layer{base, app},
		Config: Config{
			Entrypoint: []string{"/usr/local/bin/prog"},
			Cmd:        []string{"--serve"},
			Env:        []string{DefaultPath, "MODE=test"},
			User:       "1000:1000",
			WorkingDir: "/home/app",
		},
	}, dir
}

func TestWriteArchive(t *testing.T) {
	img, dir := sampleImage(t)
	out := filepath.Join(t.TempDir(), "sample.tar")
	must(t, img.WriteArchive(out))

	tag, err := name.NewTag(img.Ref)
	must(t, err)
	loaded, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatalf("loading %s from the archive: %v", img.Ref, err)
	}
	cf, err := loaded.ConfigFile()
	must(t, err)
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Time.Equal(Epoch) {
		t.Errorf("platform %s/%s created %v", cf.OS, cf.Architecture, cf.Created)
	}
	c := cf.Config
	if c.User != "1000:1000" || c.WorkingDir != "/home/app" ||
		strings.Join(c.Entrypoint, " ") != "/usr/local/bin/prog" || strings.Join(c.Cmd, " ") != "--serve" ||
		strings.Join(c.Env, ";") != DefaultPath+";MODE=test" {
		t.Errorf("config = %+v", c)
	}
	if c.Labels[RecipeLabel] != img.Recipe() {
		t.Errorf("recipe label %q, want %q", c.Labels[RecipeLabel], img.Recipe())
	}
	layers, err := loaded.Layers()
	must(t, err)
	if len(layers) != 2 {
		t.Fatalf("%d layers, want 2", len(layers))
	}
	if got := readLayer(t, layers[0]); got["etc/passwd"].content != "root:x:0:0::/:/sbin/nologin\n" || got["etc/"].typ != tar.TypeDir {
		t.Errorf("base layer = %+v", got)
	}

	rel := strings.TrimPrefix(dir, "/")
	app := readLayer(t, layers[1])
	want := map[string]tarEntry{
		"usr/local/bin/prog":      {typ: tar.TypeReg, mode: 0o755, content: "#!program"},
		"usr/local/bin/":          {typ: tar.TypeDir, mode: 0o755},
		"bin":                     {typ: tar.TypeSymlink, mode: 0o777, link: "usr/bin"},
		"home/app/":               {typ: tar.TypeDir, mode: 0o700, uid: 1000, gid: 1000},
		"tmp/":                    {typ: tar.TypeDir, mode: 0o1777},
		rel + "/alias":            {typ: tar.TypeSymlink, mode: 0o777, link: "real"},
		rel + "/real/lib/libx.so": {typ: tar.TypeReg, mode: 0o644, content: "library"},
	}
	for p, w := range want {
		if got, ok := app[p]; !ok || got != w {
			t.Errorf("%s = %+v (present %v), want %+v", p, got, ok, w)
		}
	}
	if _, ok := app[rel+"/alias/lib/libx.so"]; ok {
		t.Error("a file was copied under a symlink instead of under its target")
	}
}

func TestWriteArchiveIsReproducible(t *testing.T) {
	img, _ := sampleImage(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	must(t, img.WriteArchive(a))
	must(t, img.WriteArchive(b))
	da, err := os.ReadFile(a)
	must(t, err)
	db, err := os.ReadFile(b)
	must(t, err)
	if !bytes.Equal(da, db) {
		t.Error("two archives of the same image differ")
	}
}

func TestUpToDate(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, img *Image, dir string)
		want   bool
	}{
		{name: "unchanged", change: func(*testing.T, *Image, string) {}, want: true},
		{name: "input modified later", want: false, change: func(t *testing.T, _ *Image, dir string) {
			future := time.Now().Add(time.Hour)
			must(t, os.Chtimes(filepath.Join(dir, "prog"), future, future))
		}},
		{name: "config changed", want: false, change: func(_ *testing.T, img *Image, _ string) {
			img.Config.User = "0:0"
		}},
		{name: "tag changed", want: false, change: func(_ *testing.T, img *Image, _ string) {
			img.Ref = "localhost/test/other:v1"
		}},
		{name: "file added", want: false, change: func(_ *testing.T, img *Image, _ string) {
			img.Layers[0].File("/etc/group", 0o644, []byte("root:x:0:\n"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, dir := sampleImage(t)
			out := filepath.Join(t.TempDir(), "sample.tar")
			if ok, err := img.UpToDate(out); err != nil || ok {
				t.Fatalf("before writing: UpToDate = %v, %v", ok, err)
			}
			must(t, img.WriteArchive(out))
			tt.change(t, &img, dir)
			ok, err := img.UpToDate(out)
			must(t, err)
			if ok != tt.want {
				t.Errorf("UpToDate = %v, want %v", ok, tt.want)
			}
		})
	}
}

func TestLayerErrors(t *testing.T) {
	tests := []struct {
		name  string
		layer func() *Layer
		want  string
	}{
		{"relative path", func() *Layer { return NewLayer().File("etc/passwd", 0o644, nil) }, "not absolute"},
		{"root entry", func() *Layer { return NewLayer().Dir("/", 0o755) }, "image root"},
		{"conflicting entries", func() *Layer {
			return NewLayer().File("/a", 0o644, []byte("x")).Symlink("/a", "b")
		}, "conflicting entries for /a"},
		{"file under a file", func() *Layer {
			return NewLayer().File("/a", 0o644, nil).File("/a/b", 0o644, nil)
		}, "parent /a is not a directory"},
		{"missing host file", func() *Layer { return NewLayer().CopyFile("/x", "/nonexistent/file") }, "/nonexistent/file"},
		{"host directory as file", func() *Layer { return NewLayer().CopyFile("/x", os.TempDir()) }, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.layer().Build()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Build error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestSameEntryTwiceIsAllowed(t *testing.T) {
	l := NewLayer().Symlink("/lib", "usr/lib").Symlink("/lib", "usr/lib").Dir("/usr/lib", 0o755).File("/usr/lib/x", 0o644, []byte("x"))
	if _, err := l.Build(); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRootPath copies from a tree whose absolute symlink (/lib64/ld.so -> /lib/ld.so, as in
// Debian's libc6) must resolve inside the tree: the host has no /lib/sealion-test-ld.so.
func TestRootPath(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "lib"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "lib64"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "lib", "sealion-test-ld.so"), []byte("loader"), 0o755))
	must(t, os.Symlink("/lib/sealion-test-ld.so", filepath.Join(root, "lib64", "ld.so")))

	l := NewLayer().RootPath(root, "/lib64/ld.so")
	var buf bytes.Buffer
	must(t, l.WriteTar(&buf))
	got := map[string]tarEntry{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		data, err := io.ReadAll(tr)
		must(t, err)
		got[h.Name] = tarEntry{typ: h.Typeflag, mode: h.Mode, content: string(data), link: h.Linkname}
	}
	want := map[string]tarEntry{
		"lib/":                   {typ: tar.TypeDir, mode: 0o755},
		"lib64/":                 {typ: tar.TypeDir, mode: 0o755},
		"lib64/ld.so":            {typ: tar.TypeSymlink, mode: 0o777, link: "/lib/sealion-test-ld.so"},
		"lib/sealion-test-ld.so": {typ: tar.TypeReg, mode: 0o755, content: "loader"},
	}
	if len(got) != len(want) {
		t.Errorf("layer has %d entries, want %d: %+v", len(got), len(want), got)
	}
	for p, w := range want {
		if g, ok := got[p]; !ok || g != w {
			t.Errorf("%s = %+v (present %v), want %+v", p, g, ok, w)
		}
	}
}
