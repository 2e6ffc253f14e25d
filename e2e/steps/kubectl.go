package steps

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"sealion.dev/core/testing/controlplane"
)

// Kubectl runs the kubectl built for the cluster's Kubernetes version with the given kubeconfig,
// feeding stdin, and returns stdout; an error carries the command and its stderr. Manifests on
// stdin are written in our default API groups: where the suite's cluster (ClusterFrom(ctx)) has
// an installation of another API group suffix, they are renamed to it first.
func Kubectl(ctx context.Context, kubeconfig, stdin string, args ...string) (string, error) {
	dir, err := KubeBinDir()
	if err != nil {
		return "", err
	}
	if c := ClusterFrom(ctx); c != nil && stdin != "" {
		if stdin, err = c.Installation.Rename(stdin); err != nil {
			return "", err
		}
	}
	full := append([]string{"--kubeconfig", kubeconfig}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "kubectl"), full...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// KubeBinDir is the folder of the Kubernetes binaries built for the default version.
func KubeBinDir() (string, error) { return controlplane.BinDir() }
