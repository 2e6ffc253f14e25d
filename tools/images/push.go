package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// RegistryEnv names the registry images are pushed to when --registry is not given.
const RegistryEnv = "SEALION_REGISTRY"

// runPush pushes image archives to a registry the user names, for clusters this machine cannot
// load images into (a cloud's), and prints, per archive, its own reference and the pushed one
// pinned by digest, separated by a space: what an install then uses instead.
func runPush(ctx context.Context, args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("push", flag.ExitOnError)
	repoRoot := fl.String("repo-root", "..", "root of the main module (sealion.dev)")
	registry := fl.String("registry", os.Getenv(RegistryEnv), "registry and repository prefix to push to, as registry.example.com/team (default $"+RegistryEnv+")")
	insecure := fl.Bool("insecure", false, "reach the registry over plain HTTP (loopback and private addresses always may)")
	fl.Parse(args)

	archives := fl.Args()
	if len(archives) == 0 {
		archives = []string{filepath.Join(*repoRoot, "_output", "images", "pinniped-server.tar")}
	}
	var opts []name.Option
	if *insecure {
		opts = append(opts, name.Insecure)
	}
	for _, a := range archives {
		src, pushed, err := pushArchive(ctx, a, *registry, opts, remote.WithAuthFromKeychain(authn.DefaultKeychain))
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, src, pushed)
	}
	return nil
}

// pushArchive pushes the one image of a docker-archive tarball to <registry>/<its repository's
// last element>:<its tag> and returns its reference in the archive and the pushed one by digest.
func pushArchive(ctx context.Context, archive, registry string, nameOpts []name.Option, remoteOpts ...remote.Option) (string, string, error) {
	if registry == "" {
		return "", "", fmt.Errorf("no registry to push %s to: give --registry or set %s", archive, RegistryEnv)
	}
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
	if err != nil {
		return "", "", fmt.Errorf("image archive %s: %w", archive, err)
	}
	if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 {
		return "", "", fmt.Errorf("image archive %s holds %d images; want one with one tag", archive, len(manifest))
	}
	src, err := name.NewTag(manifest[0].RepoTags[0])
	if err != nil {
		return "", "", fmt.Errorf("image archive %s: tag %q: %w", archive, manifest[0].RepoTags[0], err)
	}
	img, err := tarball.ImageFromPath(archive, &src)
	if err != nil {
		return "", "", fmt.Errorf("image archive %s: %w", archive, err)
	}
	dst, err := name.NewTag(registry+"/"+path.Base(src.RepositoryStr())+":"+src.TagStr(), nameOpts...)
	if err != nil {
		return "", "", fmt.Errorf("registry %q: %w", registry, err)
	}
	if err := remote.Write(dst, img, append(remoteOpts, remote.WithContext(ctx))...); err != nil {
		return "", "", fmt.Errorf("pushing %s to %s: %w", archive, dst, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", "", err
	}
	return src.String(), dst.Context().Digest(digest.String()).String(), nil
}
