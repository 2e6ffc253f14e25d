package main

import (
	"flag"
	"path/filepath"

	"sealion.dev/tools/internal/imagebuild"
)

// dexBinary is the Dex fixture, built from its own module (fixtures/dex/server), so that Dex's
// dependencies stay out of the main module and of the server image.
var dexBinary = goBinary{Package: "sealion.dev/fixtures/dex/server/cmd/dex-fixture", Name: "dex-fixture"}

// runDex builds the image that runs the Dex fixture in a cluster (fixtures/dex/incluster), for
// clusters whose pods cannot reach this machine.
func runDex(args []string) error {
	fl := flag.NewFlagSet("dex", flag.ExitOnError)
	repoRoot := fl.String("repo-root", "..", "root of the main module (sealion.dev)")
	tag := fl.String("tag", "localhost/sealion/dex-fixture:dev", "image name and tag")
	output := fl.String("output", "", "archive to write (default <repo-root>/_output/images/dex-fixture.tar)")
	caBundle := fl.String("ca-bundle", defaultCABundle, "CA bundle copied to /etc/ssl/certs/ca-certificates.crt")
	force := fl.Bool("force", false, "rebuild the archive even when it is up to date")
	fl.Parse(args)

	outDir := filepath.Join(*repoRoot, "_output", "images")
	if *output == "" {
		*output = filepath.Join(outDir, "dex-fixture.tar")
	}
	binDir := filepath.Join(outDir, "bin")
	if err := buildGo(filepath.Join(*repoRoot, "fixtures", "dex", "server"), binDir, []goBinary{dexBinary}); err != nil {
		return err
	}
	return writeIfStale(dexImage(*tag, *caBundle, binDir), *output, *force)
}

// dexImage runs the fixture as nonroot; its entrypoint is the fixture, so pods give only flags.
func dexImage(tag, caBundle, binDir string) imagebuild.Image {
	bin := "/usr/local/bin/" + dexBinary.Name
	return imagebuild.Image{
		Ref:    tag,
		Layers: []*imagebuild.Layer{baseLayer(caBundle), imagebuild.NewLayer().CopyFile(bin, filepath.Join(binDir, dexBinary.Name))},
		Config: imagebuild.Config{
			Entrypoint: []string{bin},
			Env:        []string{imagebuild.DefaultPath},
			User:       nonrootUser,
			WorkingDir: "/home/nonroot",
		},
	}
}
