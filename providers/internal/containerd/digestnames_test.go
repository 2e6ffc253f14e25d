package containerd

import (
	"archive/tar"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeTar writes files (name to content) into a tarball in a temporary folder.
func writeTar(t *testing.T, files map[string]string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "archive.tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDigestNames(t *testing.T) {
	t.Parallel()
	const index = `{"schemaVersion":2,"manifests":[
		{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:aaa","annotations":{"io.containerd.image.name":"127.0.0.1:5000/team/pinniped-server:v0.1.0","org.opencontainers.image.ref.name":"v0.1.0"}},
		{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:bbb"}]}`
	got, err := DigestNames(writeTar(t, map[string]string{"oci-layout": `{"imageLayoutVersion":"1.0.0"}`, "index.json": index}))
	if err != nil {
		t.Fatal(err)
	}
	want := []DigestName{{Imported: "127.0.0.1:5000/team/pinniped-server:v0.1.0", ByDigest: "127.0.0.1:5000/team/pinniped-server@sha256:aaa"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DigestNames = %+v, want %+v", got, want)
	}
	if args := strings.Join(want[0].TagArgs(), " "); args != "--namespace k8s.io images tag --force 127.0.0.1:5000/team/pinniped-server:v0.1.0 127.0.0.1:5000/team/pinniped-server@sha256:aaa" {
		t.Errorf("TagArgs = %q", args)
	}

	// A docker archive is pulled by tag: nothing to name.
	if got, err := DigestNames(writeTar(t, map[string]string{"manifest.json": `[{"RepoTags":["localhost/x:dev"]}]`})); err != nil || got != nil {
		t.Errorf("DigestNames(docker archive) = %v, %v; want none", got, err)
	}
	if _, err := DigestNames(writeTar(t, map[string]string{"index.json": "{"})); err == nil || !strings.Contains(err.Error(), "index.json") {
		t.Errorf("DigestNames(broken index.json) = %v, want an error naming index.json", err)
	}
	if _, err := DigestNames(filepath.Join(t.TempDir(), "missing.tar")); err == nil {
		t.Error("DigestNames(missing file) succeeded")
	}
}

func TestRepository(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"localhost/sealion/pinniped-server:v0.1.0": "localhost/sealion/pinniped-server",
		"127.0.0.1:5000/team/x":                    "127.0.0.1:5000/team/x",
		"127.0.0.1:5000/team/x:dev":                "127.0.0.1:5000/team/x",
		"example.com/x@sha256:abc":                 "example.com/x",
	} {
		if got := repository(in); got != want {
			t.Errorf("repository(%q) = %q, want %q", in, got, want)
		}
	}
}
