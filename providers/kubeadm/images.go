package kubeadm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrImagesMissing is returned (wrapped) when the control-plane image archives are not built.
var ErrImagesMissing = errors.New("control-plane image archives missing: run `make images`")

// controlPlaneImages are the archive names tools/images writes to $SEALION_CACHE/images/<version>/.
var controlPlaneImages = []string{
	"pause", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "coredns",
}

// imageArchives returns the path of every control-plane archive in dir, or an error naming
// the missing ones.
func imageArchives(dir string) ([]string, error) {
	var paths, missing []string
	for _, name := range controlPlaneImages {
		p := filepath.Join(dir, name+".tar")
		if info, err := os.Stat(p); err != nil || info.IsDir() {
			missing = append(missing, name+".tar")
			continue
		}
		paths = append(paths, p)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s not in %s", ErrImagesMissing, strings.Join(missing, ", "), dir)
	}
	return paths, nil
}

// missingImages returns the references kubeadm expects that the runtime does not have.
func missingImages(expected, present []string) []string {
	var missing []string
	for _, ref := range expected {
		if !slices.Contains(present, ref) {
			missing = append(missing, ref)
		}
	}
	return missing
}

// pauseImage picks the sandbox image out of kubeadm's image list.
func pauseImage(images []string) (string, error) {
	for _, ref := range images {
		name, _, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
		if name == "pause" {
			return ref, nil
		}
	}
	return "", fmt.Errorf("kubeadm's image list has no pause image: %q", images)
}
