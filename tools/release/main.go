// Command release makes a release of sealion's Pinniped from the repository, without a container
// engine and without building Kubernetes. Run it from the tools module (make release does):
//
//	go run ./release --version v0.1.0 [--repo-root ..] [--out DIR] [--registry REGISTRY/PREFIX] [--insecure] [--platforms all]
//
// Into <out> (default <repo-root>/_output/release/<version>) it writes:
//   - pinniped-server-<version>.oci.tar: the server image for linux/amd64 and linux/arm64, one
//     index, as an OCI image layout in a tarball (ctr images import and skopeo read it);
//   - install-pinniped-concierge-crds.yaml, install-pinniped-concierge-resources.yaml,
//     install-pinniped-supervisor.yaml and install-local-user-authenticator.yaml, the plain
//     manifests with the image pinned by the index's digest, under the names Pinniped's users
//     apply;
//   - the Helm charts, packaged at the version: pinniped-concierge-<semver>.tgz and the others;
//   - pinniped-cli-<os>-<arch>[.exe] for linux, darwin and windows on amd64 and arm64;
//   - SHA256SUMS of all of them.
//
// --platforms linux/amd64 (any subset) builds the image and the CLI for those platforms only:
// make demo makes the release it installs so, for the machine it runs on.
//
// An empty .sealion-release file marks the folder as a release's, which a later release may
// replace; any other non-empty folder is refused.
//
// Everything is stamped with the version (k8s.io/component-base/version, as `pinniped version`
// and the servers' /version report it) and is reproducible: the same commit and version give the
// same bytes, dated by the commit. With --registry (or $SEALION_REGISTRY) the image index is also
// pushed as <registry>/pinniped-server:<version>, and the manifests name it there.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// RegistryEnv names the registry the image is pushed to when --registry is not given.
const RegistryEnv = "SEALION_REGISTRY"

func main() {
	fl := flag.NewFlagSet("release", flag.ExitOnError)
	version := fl.String("version", "", "the release's version, a semantic version with a leading v (v0.1.0, v0.2.0-rc.1)")
	repoRoot := fl.String("repo-root", "..", "root of the main module (sealion.dev)")
	out := fl.String("out", "", "directory for the artefacts (default <repo-root>/_output/release/<version>)")
	registry := fl.String("registry", os.Getenv(RegistryEnv), "registry and repository prefix to push the image to, as registry.example.com/team (default $"+RegistryEnv+"; empty: no push)")
	insecure := fl.Bool("insecure", false, "reach the registry over plain HTTP")
	caBundle := fl.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "CA bundle copied into the image as its trust store")
	platforms := fl.String("platforms", "all", "the platforms to build for, os/arch separated by commas (the server image for the linux ones), or all: "+platformNames(releasePlatforms))
	fl.Parse(os.Args[1:])

	if *out == "" {
		*out = filepath.Join(*repoRoot, "_output", "release", *version)
	}
	r, err := newRelease(*version, *repoRoot, *out, *registry, *insecure, *caBundle, *platforms)
	if err == nil {
		err = r.make()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}
