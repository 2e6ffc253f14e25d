package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"helm.sh/helm/v3/pkg/chart/loader"

	"sealion.dev/tools/deploycheck"
	"sealion.dev/tools/internal/imagebuild"
	"sealion.dev/tools/internal/serverimage"
)

// repoRoot is the main module's root, from this package's folder.
const repoRoot = "../.."

var commitDate = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func testRelease(t *testing.T) *release {
	t.Helper()
	return &release{version: "v0.1.0-rc.1", repoRoot: repoRoot, out: t.TempDir(), commit: "0123abc", treeState: "clean", date: commitDate, platforms: releasePlatforms}
}

func TestParsePlatforms(t *testing.T) {
	for list, want := range map[string]string{
		"all":                       platformNames(releasePlatforms),
		"linux/amd64":               "linux/amd64",
		"darwin/arm64, linux/arm64": "darwin/arm64, linux/arm64",
		"linux/amd64,linux/amd64":   "linux/amd64",
	} {
		got, err := parsePlatforms(list)
		if err != nil || platformNames(got) != want {
			t.Errorf("parsePlatforms(%q) = %v, %v; want %s", list, got, err, want)
		}
	}
	// Every release has a server image, and only the platforms a user can download exist.
	for _, bad := range []string{"", "darwin/arm64", "linux/s390x", "linux", "linux/amd64,freebsd/amd64"} {
		if got, err := parsePlatforms(bad); err == nil {
			t.Errorf("parsePlatforms(%q) = %v, accepted", bad, got)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for _, ok := range []string{"v0.1.0", "v0.1.0-rc.1", "v12.3.4"} {
		if err := checkVersion(ok); err != nil {
			t.Errorf("checkVersion(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "0.1.0", "v0.1", "v1", "latest", "v0.1.0+build"} {
		if err := checkVersion(bad); err == nil {
			t.Errorf("checkVersion(%q) accepted it", bad)
		}
	}
}

func TestLDFlagsStampTheVersion(t *testing.T) {
	got := strings.Join(testRelease(t).ldflags(), " ")
	for _, want := range []string{
		"-X k8s.io/component-base/version.gitVersion=v0.1.0-rc.1",
		"-X k8s.io/component-base/version.gitMajor=0",
		"-X k8s.io/component-base/version.gitMinor=1",
		"-X k8s.io/component-base/version.gitCommit=0123abc",
		"-X k8s.io/component-base/version.gitTreeState=clean",
		"-X k8s.io/component-base/version.buildDate=2026-11-28T12:00:00Z",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ldflags %q lack %q", got, want)
		}
	}
}

// The install YAMLs are the plain manifests with the image pinned: the Concierge split into its
// CRDs and the rest, no development image left, each one's objects as kustomize builds them.
func TestInstallManifests(t *testing.T) {
	r := testRelease(t)
	const ref = "registry.example/team/pinniped-server@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if err := r.installManifests(ref); err != nil {
		t.Fatal(err)
	}
	for _, f := range installFiles {
		data, err := os.ReadFile(filepath.Join(r.out, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), devImage) {
			t.Errorf("%s still names %s", f.name, devImage)
		}
		if f.runsImage != strings.Contains(string(data), "image: "+ref) {
			t.Errorf("%s: names the pinned image: %v, want %v", f.name, !f.runsImage, f.runsImage)
		}
		objects, err := deploycheck.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		crds := 0
		for _, o := range objects {
			if isCRD(o) {
				crds++
			}
		}
		switch f.name {
		case "install-pinniped-concierge-crds.yaml":
			if crds == 0 || crds != len(objects) {
				t.Errorf("%s: %d CRDs of %d objects, want only CRDs", f.name, crds, len(objects))
			}
		case "install-pinniped-concierge-resources.yaml":
			if crds != 0 {
				t.Errorf("%s has %d CRDs", f.name, crds)
			}
		}
	}
}

// The packaged charts carry the version and the release's image, keep values.yaml's comments,
// and come out byte for byte the same when packaged again.
func TestChartsAreVersionedAndReproducible(t *testing.T) {
	r := testRelease(t)
	const ref = "registry.example/team/pinniped-server@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if err := r.charts(ref); err != nil {
		t.Fatal(err)
	}
	first := map[string][]byte{}
	for _, name := range []string{"pinniped-concierge-0.1.0-rc.1.tgz", "pinniped-supervisor-0.1.0-rc.1.tgz", "local-user-authenticator-0.1.0-rc.1.tgz"} {
		path := filepath.Join(r.out, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		first[name] = data
		ch, err := loader.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if ch.Metadata.Version != "0.1.0-rc.1" || ch.Metadata.AppVersion != "v0.1.0-rc.1" {
			t.Errorf("%s: version %q, appVersion %q", name, ch.Metadata.Version, ch.Metadata.AppVersion)
		}
		image := ch.Values["image"].(map[string]any)
		if image["repository"] != "registry.example/team/pinniped-server" || image["tag"] != "v0.1.0-rc.1" {
			t.Errorf("%s: image values %v", name, image)
		}
		for _, f := range ch.Raw {
			if f.Name == "values.yaml" && !bytes.Contains(f.Data, []byte("\n#")) {
				t.Errorf("%s: values.yaml lost its comments", name)
			}
		}
		for _, h := range tarHeaders(t, data, true) {
			if !h.ModTime.Equal(commitDate) {
				t.Errorf("%s: %s dated %s, want the commit's date", name, h.Name, h.ModTime)
			}
		}
	}
	time.Sleep(1100 * time.Millisecond) // Helm dates entries by the second
	if err := r.charts(ref); err != nil {
		t.Fatal(err)
	}
	for name, data := range first {
		again, err := os.ReadFile(filepath.Join(r.out, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, data) {
			t.Errorf("%s differs when packaged again", name)
		}
	}
}

// The image tarball is an OCI layout that go-containerregistry reads back as the same index,
// with the annotations containerd names the image by, and the same bytes when written again.
func TestLayoutTarball(t *testing.T) {
	index, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	annotations := map[string]string{containerdNameAnnotation: "registry.example/pinniped-server:v0.1.0", ociRefNameAnnotation: "v0.1.0"}
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	for _, p := range []string{a, b} {
		if err := writeLayoutTarball(p, index, annotations, commitDate); err != nil {
			t.Fatal(err)
		}
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	if !bytes.Equal(da, db) {
		t.Error("the same index gave two different tarballs")
	}
	extracted := t.TempDir()
	for _, h := range tarHeaders(t, da, false) {
		if !h.ModTime.Equal(commitDate) {
			t.Errorf("%s dated %s", h.Name, h.ModTime)
		}
	}
	untar(t, da, extracted)
	p, err := layout.FromPath(extracted)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := index.Digest()
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != want {
		t.Fatalf("layout's index.json lists %+v, want the one index %s", m.Manifests, want)
	}
	if got := m.Manifests[0].Annotations[containerdNameAnnotation]; got != annotations[containerdNameAnnotation] {
		t.Errorf("containerd's name annotation %q", got)
	}
	if _, err := top.ImageIndex(want); err != nil {
		t.Errorf("the index is not readable from the layout: %v", err)
	}
}

func TestWriteSums(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"b.yaml": "b", "a-cli": "a"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeSums(dir); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	want := "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a-cli\n" +
		"3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d  b.yaml\n"
	if string(got) != want {
		t.Errorf("SHA256SUMS:\n%s\nwant:\n%s", got, want)
	}
}

func tarHeaders(t *testing.T, data []byte, gzipped bool) []*tar.Header {
	t.Helper()
	var r io.Reader = bytes.NewReader(data)
	if gzipped {
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	var headers []*tar.Header
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return headers
		}
		if err != nil {
			t.Fatal(err)
		}
		headers = append(headers, h)
	}
}

func untar(t *testing.T, data []byte, dir string) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The released image does not depend on where its binaries were built: the development recipe
// label, which digests their paths, is replaced by the OCI labels of the release.
func TestServerImageIndependentOfBuildFolder(t *testing.T) {
	r := testRelease(t)
	caBundle := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caBundle, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var digests []string
	for range 2 {
		binDir := t.TempDir()
		for _, b := range serverimage.Binaries {
			if err := os.WriteFile(filepath.Join(binDir, b.Name), []byte("binary "+b.Name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		built, err := serverimage.Image("localhost/sealion/pinniped-server:v0.1.0-rc.1", caBundle, binDir, "arm64", serverimage.Binaries).Build()
		if err != nil {
			t.Fatal(err)
		}
		img, err := r.releaseLabels(built)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := cf.Config.Labels[imagebuild.RecipeLabel]; ok {
			t.Error("the development recipe label is still there")
		}
		if cf.Config.Labels["org.opencontainers.image.version"] != "v0.1.0-rc.1" || cf.Config.Labels["org.opencontainers.image.revision"] != "0123abc" {
			t.Errorf("labels %v", cf.Config.Labels)
		}
		if cf.Architecture != "arm64" || cf.Config.User != imagebuild.NonrootUser {
			t.Errorf("architecture %q, user %q", cf.Architecture, cf.Config.User)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d.String())
	}
	if digests[0] != digests[1] {
		t.Errorf("the same binaries from two folders gave images %s and %s", digests[0], digests[1])
	}
}

// A release goes into an empty folder or over an earlier release, never over other files.
func TestReleaseRefusesForeignFolder(t *testing.T) {
	r := testRelease(t)
	if err := os.WriteFile(filepath.Join(r.out, "precious.txt"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.make(); err == nil || !strings.Contains(err.Error(), "holds no earlier release") {
		t.Fatalf("make = %v, want a refusal", err)
	}
	if data, _ := os.ReadFile(filepath.Join(r.out, "precious.txt")); string(data) != "keep me" {
		t.Error("the folder's file was touched")
	}
}
