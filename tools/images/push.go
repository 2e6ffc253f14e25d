package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
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
	registry := fl.String("registry", os.Getenv(RegistryEnv), "registry and repository prefix to push to, as registry.example.com/team (default $"+RegistryEnv+")")
	insecure := fl.Bool("insecure", false, "reach the registry over plain HTTP (loopback and private addresses always may)")
	fl.Parse(args)

	archives := fl.Args()
	if len(archives) == 0 {
		return fmt.Errorf("no image archive to push: name them, as images push --registry REGISTRY/PREFIX ARCHIVE...")
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

// pushArchive pushes the one image of a tarball to <registry>/<its repository's last element>:<its
// tag> and returns its reference in the archive and the pushed one by digest. The tarball is a
// docker archive (the fixtures' images) or an OCI layout holding one image index (the release's
// server image, both architectures), which keeps its digest when pushed.
func pushArchive(ctx context.Context, archive, registry string, nameOpts []name.Option, remoteOpts ...remote.Option) (string, string, error) {
	if registry == "" {
		return "", "", fmt.Errorf("no registry to push %s to: give --registry or set %s", archive, RegistryEnv)
	}
	isLayout, err := tarHolds(archive, "index.json")
	if err != nil {
		return "", "", fmt.Errorf("image archive %s: %w", archive, err)
	}
	var srcName string
	var img pushable
	if isLayout {
		// go-containerregistry reads layouts from folders; the push reads the blobs from there.
		dir, err := os.MkdirTemp("", "images-push-")
		if err != nil {
			return "", "", err
		}
		defer os.RemoveAll(dir)
		srcName, img, err = loadLayoutArchive(archive, dir)
	} else {
		srcName, img, err = loadDockerArchive(archive)
	}
	if err != nil {
		return "", "", fmt.Errorf("image archive %s: %w", archive, err)
	}
	src, err := name.NewTag(srcName)
	if err != nil {
		return "", "", fmt.Errorf("image archive %s: tag %q: %w", archive, srcName, err)
	}
	dst, err := name.NewTag(registry+"/"+path.Base(src.RepositoryStr())+":"+src.TagStr(), nameOpts...)
	if err != nil {
		return "", "", fmt.Errorf("registry %q: %w", registry, err)
	}
	if err := remote.Push(dst, img, append(remoteOpts, remote.WithContext(ctx))...); err != nil {
		return "", "", fmt.Errorf("pushing %s to %s: %w", archive, dst, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", "", err
	}
	return src.String(), dst.Context().Digest(digest.String()).String(), nil
}

// pushable is what an archive holds: an image, or an image index.
type pushable interface {
	remote.Taggable
	Digest() (v1.Hash, error)
}

// loadDockerArchive reads the one image, with its one tag, of a docker archive.
func loadDockerArchive(archive string) (string, pushable, error) {
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
	if err != nil {
		return "", nil, err
	}
	if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 {
		return "", nil, fmt.Errorf("holds %d images; want one with one tag", len(manifest))
	}
	tag, err := name.NewTag(manifest[0].RepoTags[0])
	if err != nil {
		return "", nil, fmt.Errorf("tag %q: %w", manifest[0].RepoTags[0], err)
	}
	img, err := tarball.ImageFromPath(archive, &tag)
	return manifest[0].RepoTags[0], img, err
}

// loadLayoutArchive unpacks an OCI layout tarball into dir and returns the one image index it
// holds, and its name from the annotation ctr import names it by too.
func loadLayoutArchive(archive, dir string) (string, pushable, error) {
	if err := untar(archive, dir); err != nil {
		return "", nil, err
	}
	lp, err := layout.FromPath(dir)
	if err != nil {
		return "", nil, err
	}
	outer, err := lp.ImageIndex()
	if err != nil {
		return "", nil, err
	}
	m, err := outer.IndexManifest()
	if err != nil {
		return "", nil, err
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() || m.Manifests[0].Annotations[containerdNameAnnotation] == "" {
		return "", nil, fmt.Errorf("holds %d entries; want one image index named by %s", len(m.Manifests), containerdNameAnnotation)
	}
	idx, err := outer.ImageIndex(m.Manifests[0].Digest)
	return m.Manifests[0].Annotations[containerdNameAnnotation], idx, err
}
