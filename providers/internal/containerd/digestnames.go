package containerd

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// nameAnnotation is the annotation of an OCI layout's index entry that ctr import names the
// image by.
const nameAnnotation = "io.containerd.image.name"

// DigestName is an image that ctr import names <repository>:<tag> (Imported), and that manifests
// pinned by digest ask the CRI plugin for as <repository>@<digest> (ByDigest). The CRI plugin
// finds an image only under a name containerd holds, and an import names none by digest, so the
// image is tagged with it too.
type DigestName struct{ Imported, ByDigest string }

// TagArgs are the ctr arguments, after the connection's, that give the image its digest name.
func (n DigestName) TagArgs() []string {
	return []string{"--namespace", Namespace, "images", "tag", "--force", n.Imported, n.ByDigest}
}

// DigestNames reads the index.json of an OCI layout tarball and returns, for each entry named by
// the annotation ctr import reads, its name by digest. A docker-archive tarball (no index.json)
// has none: its images are pulled by tag.
func DigestNames(archive string) ([]DigestName, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading image archive %s: %w", archive, err)
		}
		if strings.TrimPrefix(h.Name, "./") != "index.json" {
			continue
		}
		var index struct {
			Manifests []struct {
				Digest      string            `json:"digest"`
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(tr).Decode(&index); err != nil {
			return nil, fmt.Errorf("image archive %s: index.json: %w", archive, err)
		}
		var names []DigestName
		for _, m := range index.Manifests {
			name := m.Annotations[nameAnnotation]
			if name == "" {
				continue
			}
			names = append(names, DigestName{Imported: name, ByDigest: repository(name) + "@" + m.Digest})
		}
		return names, nil
	}
}

// repository is a reference without its tag or digest: the colon of a tag comes after the last
// slash, unlike a registry's port.
func repository(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if colon := strings.LastIndex(ref, ":"); colon > strings.LastIndex(ref, "/") {
		return ref[:colon]
	}
	return ref
}
