package main

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"sealion.dev/tools/internal/gobuild"
	"sealion.dev/tools/internal/serverimage"
)

// devRepository is the server image's name in the development manifests and charts, which the
// release replaces, and its name in a release made without a registry.
const devRepository = "localhost/sealion/pinniped-server"

// The annotations of the layout's one entry: the name containerd gives the image it imports, and
// the OCI tag.
const (
	containerdNameAnnotation = "io.containerd.image.name"
	ociRefNameAnnotation     = "org.opencontainers.image.ref.name"
)

// repository is where the release's image lives: <registry>/pinniped-server, or without a
// registry the development name, under which users load the tarball into their nodes.
func (r *release) repository() string {
	if r.registry == "" {
		return devRepository
	}
	return strings.TrimSuffix(r.registry, "/") + "/pinniped-server"
}

// serverImage builds the image for every linux platform into one index, writes it as an OCI layout
// tarball, pushes it when a registry is set, and returns the image's reference pinned by the
// index's digest.
func (r *release) serverImage() (string, error) {
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	tag := r.repository() + ":" + r.version
	for _, p := range r.platforms {
		if p.os != "linux" {
			continue
		}
		arch := p.arch
		binDir := filepath.Join(r.out, ".build", "linux-"+arch)
		target := gobuild.Target{OS: "linux", Arch: arch, LDFlags: r.ldflags()}
		if err := gobuild.Build(r.repoRoot, binDir, target, serverimage.Binaries); err != nil {
			return "", err
		}
		built, err := serverimage.Image(tag, r.caBundle, binDir, arch, serverimage.Binaries).Build()
		if err != nil {
			return "", err
		}
		img, err := r.releaseLabels(built)
		if err != nil {
			return "", err
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}},
		})
	}
	if err := os.RemoveAll(filepath.Join(r.out, ".build")); err != nil {
		return "", err
	}
	digest, err := index.Digest()
	if err != nil {
		return "", err
	}
	archive := filepath.Join(r.out, "pinniped-server-"+r.version+".oci.tar")
	if err := writeLayoutTarball(archive, index, map[string]string{containerdNameAnnotation: tag, ociRefNameAnnotation: r.version}, r.date); err != nil {
		return "", err
	}
	if r.registry != "" {
		if err := r.push(tag, index); err != nil {
			return "", err
		}
	}
	return r.repository() + "@" + digest.String(), nil
}

// releaseLabels replaces the image's labels with the OCI ones naming the release. The recipe
// label of development images goes: it digests the binaries' paths on this machine, which would
// make the image, and the digest the manifests pin, depend on where the release was made.
func (r *release) releaseLabels(img v1.Image) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg := cf.Config
	cfg.Labels = map[string]string{
		"org.opencontainers.image.title":    "pinniped-server",
		"org.opencontainers.image.version":  r.version,
		"org.opencontainers.image.revision": r.commit,
		"org.opencontainers.image.created":  r.date.Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	return mutate.Config(img, cfg)
}

func (r *release) push(tag string, index v1.ImageIndex) error {
	var opts []name.Option
	if r.insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.NewTag(tag, opts...)
	if err != nil {
		return fmt.Errorf("image name %q: %w", tag, err)
	}
	if err := remote.WriteIndex(ref, index, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}

// writeLayoutTarball writes index as an OCI image layout whose index.json has one entry with
// annotations, and packs the layout into a tarball at path whose entries are sorted and dated
// date, so that the same index gives the same bytes.
func writeLayoutTarball(path string, index v1.ImageIndex, annotations map[string]string, date time.Time) error {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(index, layout.WithAnnotations(annotations)); err != nil {
		return fmt.Errorf("writing the image layout: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	// WalkDir visits in lexical order, so the tarball's order depends on the names only.
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: date, Format: tar.FormatPAX, Mode: 0o644, Typeflag: tar.TypeReg}
		if d.IsDir() {
			h.Name += "/"
			h.Mode, h.Typeflag = 0o755, tar.TypeDir
			return tw.WriteHeader(h)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h.Size = info.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
