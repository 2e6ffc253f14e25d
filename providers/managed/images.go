package managed

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Archives of the cluster images (built by `make images`) that the node needs. kube-proxy runs
// on the host and the control plane as processes, so only these two are imported.
const (
	pauseArchive   = "pause.tar"
	corednsArchive = "coredns.tar"
)

// archiveTag returns the first image reference a docker-archive tarball carries, so the image
// names follow whatever version `make images` packed.
func archiveTag(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading image archive: %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("image archive %s has no manifest.json", path)
		}
		if err != nil {
			return "", fmt.Errorf("reading image archive %s: %w", path, err)
		}
		if filepath.Clean(hdr.Name) != "manifest.json" {
			continue
		}
		var manifest []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
			return "", fmt.Errorf("parsing manifest.json of %s: %w", path, err)
		}
		if len(manifest) == 0 || len(manifest[0].RepoTags) == 0 {
			return "", fmt.Errorf("image archive %s names no image", path)
		}
		return manifest[0].RepoTags[0], nil
	}
}
