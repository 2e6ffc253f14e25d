package main

import (
	"flag"
	"path/filepath"
	"runtime"

	"sealion.dev/tools/internal/gobuild"
	"sealion.dev/tools/internal/imagebuild"
)

// goImage is an image of Go programs of ours, built by the subcommand of its name into
// <repo-root>/_output/images/<archive>. The fixture images share their flags and
// steps: build the binaries, pack them, keep an archive that is up to date.
type goImage struct {
	// name is the subcommand's.
	name string
	// tag is the default image name and tag.
	tag string
	// archive is the file name under <repo-root>/_output/images.
	archive string
	// module is the directory of the binaries' module below the repository root.
	module string
	bins   []gobuild.Binary
	// image packs the binaries, found in binDir, under tag.
	image func(tag, caBundle, binDir string) imagebuild.Image
}

func (g goImage) run(args []string) error {
	fl := flag.NewFlagSet(g.name, flag.ExitOnError)
	repoRoot := fl.String("repo-root", "..", "root of the main module (sealion.dev)")
	tag := fl.String("tag", g.tag, "image name and tag")
	output := fl.String("output", "", "archive to write (default <repo-root>/_output/images/"+g.archive+")")
	caBundle := fl.String("ca-bundle", defaultCABundle, "CA bundle copied to /etc/ssl/certs/ca-certificates.crt")
	force := fl.Bool("force", false, "rebuild the archive even when it is up to date")
	fl.Parse(args)

	outDir := filepath.Join(*repoRoot, "_output", "images")
	if *output == "" {
		*output = filepath.Join(outDir, g.archive)
	}
	binDir := filepath.Join(outDir, "bin")
	if err := gobuild.Build(filepath.Join(*repoRoot, g.module), binDir, gobuild.Target{OS: "linux", Arch: runtime.GOARCH}, g.bins); err != nil {
		return err
	}
	return writeIfStale(g.image(*tag, *caBundle, binDir), *output, *force)
}

// entrypointImage runs one program as nonroot; its entrypoint is the program, so pods give only
// its flags.
func entrypointImage(b gobuild.Binary, tag, caBundle, binDir string) imagebuild.Image {
	bin := "/usr/local/bin/" + b.Name
	return imagebuild.Image{
		Ref:    tag,
		Layers: []*imagebuild.Layer{imagebuild.Base(caBundle), imagebuild.NewLayer().CopyFile(bin, filepath.Join(binDir, b.Name))},
		Config: imagebuild.Config{
			Entrypoint: []string{bin},
			Env:        []string{imagebuild.DefaultPath},
			User:       imagebuild.NonrootUser,
			WorkingDir: "/home/nonroot",
		},
	}
}
