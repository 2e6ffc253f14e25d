package steps

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

// ReleaseVersion is the version of the release the suites install, as users do: its YAMLs, and
// its server image tarball loaded into the nodes or pushed (make release-check makes it).
const ReleaseVersion = "v0.0.0-dev"

// ReleaseDir is the folder of the release the suites install.
func ReleaseDir() string { return RepoPath("_output/release/" + ReleaseVersion) }

// ServerImageArchive is the release's server image tarball (an OCI layout, amd64 and arm64).
func ServerImageArchive() string { return serverImageArchive(ReleaseDir(), ReleaseVersion) }

// PreviousReleaseVersion is the release before this commit's, which the upgrade test installs
// first; the matrix's previous-release artifact makes it at its commit (tools/previousrelease).
const PreviousReleaseVersion = "v0.1.0-rc.2"

// PreviousReleaseDir is the folder of the previous release.
func PreviousReleaseDir() string {
	return RepoPath("_output/previous-release/" + PreviousReleaseVersion)
}

// PreviousServerImageArchive is the previous release's server image tarball.
func PreviousServerImageArchive() string {
	return serverImageArchive(PreviousReleaseDir(), PreviousReleaseVersion)
}

func serverImageArchive(dir, version string) string {
	return filepath.Join(dir, "pinniped-server-"+version+".oci.tar")
}

// ServerImage is the release's server image as its tarball names it, which clusters on this
// machine find by once it is loaded into their nodes; the install YAMLs name it by digest.
const ServerImage = "localhost/sealion/pinniped-server:" + ReleaseVersion

// RegistryEnv names the registry (and repository prefix, as registry.example.com/team) that
// PushImages pushes to for clusters no image can be loaded into; tools/images reads it too.
const RegistryEnv = "SEALION_REGISTRY"

type pushedKey struct{}

// pushed maps an image's local reference (ServerImage) to the reference, pinned by digest, it
// was pushed to.
type pushed map[string]string

// PushImages pushes image tarballs (docker archives, or the release's OCI layout) to registry
// with tools/images (go-containerregistry, credentials from the Docker config), instead of
// loading them into the cluster's nodes: the installs and Image then use the pushed references,
// pinned by digest.
func PushImages(registry string, archives ...string) env.Func {
	return func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		for _, a := range archives {
			if _, err := os.Stat(a); err != nil {
				return ctx, fmt.Errorf("image archive %s is missing (run make images release-check): %w", a, err)
			}
		}
		args := append([]string{"run", "./images", "push", "--registry", registry}, archives...)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = RepoPath("tools")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return ctx, fmt.Errorf("pushing images to %s: %w: %s", registry, err, strings.TrimSpace(stderr.String()))
		}
		images, err := parsePushed(stdout.String(), len(archives))
		if err != nil {
			return ctx, err
		}
		for local, ref := range images {
			fmt.Fprintf(os.Stderr, "e2e: %s pushed as %s\n", local, ref)
		}
		return context.WithValue(ctx, pushedKey{}, images), nil
	}
}

// parsePushed reads the lines `images push` prints, "<local ref> <pushed ref by digest>".
func parsePushed(out string, want int) (pushed, error) {
	images := pushed{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		local, ref, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || !strings.Contains(ref, "@sha256:") {
			return nil, fmt.Errorf("images push printed %q, want \"<local ref> <pushed ref>@sha256:...\"", line)
		}
		images[local] = ref
	}
	if len(images) != want {
		return nil, fmt.Errorf("images push printed %d images for %d archives: %q", len(images), want, out)
	}
	return images, nil
}

// Image is the reference pods of the suite's cluster pull local by: where PushImages ran, the
// pushed reference, else local itself.
func Image(ctx context.Context, local string) string {
	if ref, ok := pushedFrom(ctx)[local]; ok {
		return ref
	}
	return local
}

func pushedFrom(ctx context.Context) pushed {
	p, _ := ctx.Value(pushedKey{}).(pushed)
	return p
}

// imageOverrides is the kustomize `images` list that points the manifests' images at their
// pushed references: name without tag, the new repository and the digest.
func imageOverrides(images pushed) (string, error) {
	var b strings.Builder
	for _, local := range slices.Sorted(maps.Keys(images)) {
		name := local
		if slash, colon := strings.LastIndex(local, "/"), strings.LastIndex(local, ":"); colon > slash {
			name = local[:colon]
		}
		repo, digest, ok := strings.Cut(images[local], "@")
		if !ok {
			return "", fmt.Errorf("pushed image %q of %s is not pinned by digest", images[local], local)
		}
		fmt.Fprintf(&b, "- {name: %q, newName: %q, digest: %q}\n", name, repo, digest)
	}
	return b.String(), nil
}
