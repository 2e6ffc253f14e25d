// Package kubeadmimages asks a kubeadm binary which images it expects for a Kubernetes version
// (`kubeadm config images list`), so images built locally carry exactly those names.
package kubeadmimages

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Image is one image kubeadm expects.
type Image struct {
	// Ref is the full reference, such as registry.k8s.io/coredns/coredns:v1.12.0.
	Ref string
	// Component is the last element of the repository: kube-apiserver, etcd, coredns, pause, ...
	Component string
	// Tag is the reference's tag, such as v1.12.0 or 3.5.24-0.
	Tag string
}

// List runs kubeadm and parses its answer.
func List(kubeadm, kubernetesVersion string) ([]Image, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kubeadm, "config", "images", "list", "--kubernetes-version", kubernetesVersion)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s config images list --kubernetes-version %s: %w: %s", kubeadm, kubernetesVersion, err, strings.TrimSpace(stderr.String()))
	}
	return Parse(stdout.Bytes())
}

// Parse reads one image reference per line; blank lines are ignored and every reference must
// carry a tag (kubeadm never lists digests).
func Parse(out []byte) ([]Image, error) {
	var images []Image
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		tag, err := name.NewTag(line, name.StrictValidation)
		if err != nil {
			return nil, fmt.Errorf("kubeadm listed %q, which is not a tagged image reference: %w", line, err)
		}
		component := path.Base(tag.RepositoryStr())
		if seen[component] {
			return nil, fmt.Errorf("kubeadm listed two images for %s", component)
		}
		seen[component] = true
		images = append(images, Image{Ref: line, Component: component, Tag: tag.TagStr()})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(images) == 0 {
		return nil, fmt.Errorf("kubeadm listed no images")
	}
	return images, nil
}
