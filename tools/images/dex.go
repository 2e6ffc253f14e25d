package main

import (
	"sealion.dev/tools/internal/gobuild"
	"sealion.dev/tools/internal/imagebuild"
)

// dexBinary is the Dex fixture, built from its own module (fixtures/dex/server), so that Dex's
// dependencies stay out of the main module and of the server image.
var dexBinary = gobuild.Binary{Package: "sealion.dev/fixtures/dex/server/cmd/dex-fixture", Name: "dex-fixture"}

// dexImageBuild is the image that runs the Dex fixture in a cluster (fixtures/dex/incluster),
// for clusters whose pods cannot reach this machine.
var dexImageBuild = goImage{
	name:    "dex",
	tag:     "localhost/sealion/dex-fixture:dev",
	archive: "dex-fixture.tar",
	module:  "fixtures/dex/server",
	bins:    []gobuild.Binary{dexBinary},
	image: func(tag, caBundle, binDir string) imagebuild.Image {
		return entrypointImage(dexBinary, tag, caBundle, binDir)
	},
}
