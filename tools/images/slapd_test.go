package main

import (
	"archive/tar"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"sealion.dev/tools/internal/elfdeps"
	"sealion.dev/tools/internal/imagebuild"
)

// The slapd image packs, from the unpacked packages, slapd, the modules the fixture loads (the
// .so symlink and its library, no .la and no other module), the schema files, every library
// they need and libgcc_s, which glibc loads unasked, and runs slapd as nonroot. The tree is faked from this machine's true(1), whose
// loader and libraries stand in for slapd's.
func TestSlapdImage(t *testing.T) {
	root := t.TempDir()
	host, err := elfdeps.Needed("/", []string{"/usr/bin/true"}, elfdeps.DefaultDirs())
	if err != nil || len(host) == 0 {
		t.Skipf("this machine's true(1) is no dynamically linked program to fake slapd with (%v)", err)
	}
	put := func(p, src string) {
		t.Helper()
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(root, path.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(p, target string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, lib := range host {
		real, err := filepath.EvalSymlinks(lib)
		if err != nil {
			t.Fatal(err)
		}
		put(lib, real)
	}
	put("/usr/sbin/slapd", "/usr/bin/true")
	gcc := path.Join(path.Dir(host[len(host)-1]), "libgcc_s.so.1")
	put(gcc, "/usr/bin/true")
	for _, m := range []string{"back_mdb", "memberof", "back_sql"} {
		put("/usr/lib/ldap/"+m+"-2.5.so.0.1.8", "/usr/bin/true")
		link("/usr/lib/ldap/"+m+".so", m+"-2.5.so.0.1.8")
		put("/usr/lib/ldap/"+m+".la", "/usr/bin/true")
	}
	schema := filepath.Join(root, "etc", "ldap", "schema")
	if err := os.MkdirAll(schema, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(schema, "core.schema"), []byte("attributetype"), 0o644); err != nil {
		t.Fatal(err)
	}
	caBundle := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caBundle, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	const ref = "localhost/sealion/slapd-fixture:test"
	recipe, err := slapdImage(ref, caBundle, root)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "slapd.tar")
	if err := recipe.WriteArchive(out); err != nil {
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
	if want := []string{"/usr/sbin/slapd"}; !slices.Equal(cf.Config.Entrypoint, want) || len(cf.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want %q and no cmd", cf.Config.Entrypoint, cf.Config.Cmd, want)
	}
	if cf.Config.User != imagebuild.NonrootUser {
		t.Errorf("user %q, want %s", cf.Config.User, imagebuild.NonrootUser)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*tar.Header{}
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
			files["/"+strings.TrimSuffix(h.Name, "/")] = h
		}
		rc.Close()
	}
	want := []string{"/usr/sbin/slapd", "/etc/ldap/schema/core.schema", "/etc/passwd", gcc,
		"/usr/lib/ldap/back_mdb-2.5.so.0.1.8", "/usr/lib/ldap/memberof-2.5.so.0.1.8"}
	// A library reached through a symlink (/lib64's loader) is in the image as that symlink.
	for _, p := range append(want, host...) {
		if h := files[p]; h == nil || (h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeSymlink) {
			t.Errorf("the image lacks %s", p)
		}
	}
	for _, m := range []string{"back_mdb", "memberof"} {
		if h := files["/usr/lib/ldap/"+m+".so"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != m+"-2.5.so.0.1.8" {
			t.Errorf("/usr/lib/ldap/%s.so is %+v, want the symlink to its library", m, h)
		}
		if files["/usr/lib/ldap/"+m+".la"] != nil {
			t.Errorf("the image has %s.la, which libltdl would prefer to the .so", m)
		}
	}
	if files["/usr/lib/ldap/back_sql.so"] != nil {
		t.Error("the image has back_sql, which the fixture does not load")
	}
	if h := files["/usr/sbin/slapd"]; h != nil && h.Mode&0o111 == 0 {
		t.Errorf("slapd has mode %o, want executable", h.Mode)
	}
}
