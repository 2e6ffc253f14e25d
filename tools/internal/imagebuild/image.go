package imagebuild

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// DefaultPath is the PATH of images built here, as in Debian and distroless images.
const DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// RecipeLabel is the config label holding a digest of everything that defines an image except the
// content of copied host files; with the archive's modification time it decides whether an
// existing archive is up to date.
const RecipeLabel = "dev.sealion.image.recipe"

// Config is the runtime configuration an image sets.
type Config struct {
	Entrypoint []string
	Cmd        []string
	Env        []string
	User       string
	WorkingDir string
	Labels     map[string]string
}

// Image describes one image: the name it is tagged with, its layers from bottom to top, and its
// configuration. One name per image keeps the archive byte-for-byte reproducible (go-containerregistry
// orders several tags of one image by map iteration). The platform is linux on Arch, which must be
// the architecture of the binaries packed.
type Image struct {
	Ref    string
	Layers []*Layer
	Config Config
	// Arch is a GOARCH; empty means the build host's (runtime.GOARCH).
	Arch string
}

// arch is the image's architecture, the host's unless Arch says otherwise.
func (img Image) arch() string {
	if img.Arch != "" {
		return img.Arch
	}
	return runtime.GOARCH
}

// Recipe returns the digest stored under RecipeLabel.
func (img Image) Recipe() string {
	h := sha256.New()
	cfg, _ := json.Marshal(struct {
		Ref    string
		Config Config
		Arch   string
	}{img.Ref, img.Config, img.arch()})
	h.Write(cfg)
	for i, l := range img.Layers {
		fmt.Fprintf(h, "\nlayer %d\n", i)
		l.describe(h)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Inputs lists the host files the image copies.
func (img Image) Inputs() []string {
	var in []string
	for _, l := range img.Layers {
		in = append(in, l.Inputs()...)
	}
	return in
}

// Build assembles the image.
func (img Image) Build() (v1.Image, error) {
	if img.Ref == "" {
		return nil, errors.New("an image needs a name")
	}
	adds := make([]mutate.Addendum, 0, len(img.Layers))
	for i, l := range img.Layers {
		layer, err := l.Build()
		if err != nil {
			return nil, fmt.Errorf("building layer %d of %s: %w", i, img.Ref, err)
		}
		adds = append(adds, mutate.Addendum{
			Layer:   layer,
			History: v1.History{Created: v1.Time{Time: Epoch}, CreatedBy: "sealion.dev/tools/images"},
		})
	}
	out, err := mutate.Append(empty.Image, adds...)
	if err != nil {
		return nil, err
	}
	cf, err := out.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", img.arch()
	cf.Created = v1.Time{Time: Epoch}
	labels := maps.Clone(img.Config.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[RecipeLabel] = img.Recipe()
	cf.Config = v1.Config{
		Entrypoint: img.Config.Entrypoint,
		Cmd:        img.Config.Cmd,
		Env:        img.Config.Env,
		User:       img.Config.User,
		WorkingDir: img.Config.WorkingDir,
		Labels:     labels,
	}
	return mutate.ConfigFile(out, cf)
}

// WriteArchive builds the image and writes it as a docker-archive tarball at path, replacing any
// previous file only once the new one is complete.
func (img Image) WriteArchive(path string) error {
	built, err := img.Build()
	if err != nil {
		return err
	}
	tag, err := name.NewTag(img.Ref)
	if err != nil {
		return fmt.Errorf("image name %q: %w", img.Ref, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tarball.Write(tag, built, tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// UpToDate reports whether the archive at path was written from this recipe after every input
// last changed.
func (img Image) UpToDate(path string) (bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, in := range img.Inputs() {
		ii, err := os.Stat(in)
		if err != nil {
			return false, err
		}
		if !ii.ModTime().Before(fi.ModTime()) {
			return false, nil
		}
	}
	existing, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		return false, nil // unreadable or foreign: rebuild it
	}
	cf, err := existing.ConfigFile()
	if err != nil {
		return false, nil
	}
	return cf.Config.Labels[RecipeLabel] == img.Recipe(), nil
}
