package main

import (
	"sealion.dev/tools/internal/gobuild"
	"sealion.dev/tools/internal/imagebuild"
)

// githubBinary is the GitHub double's command, built from the main module: unlike Dex, the double
// brings no dependencies of its own.
var githubBinary = gobuild.Binary{Package: "sealion.dev/fixtures/github/cmd/github-fixture", Name: "github-fixture"}

// githubImageBuild is the image that runs the GitHub double in a cluster
// (fixtures/github/incluster), for clusters whose pods cannot reach this machine.
var githubImageBuild = goImage{
	name:    "github",
	tag:     "localhost/sealion/github-fixture:dev",
	archive: "github-fixture.tar",
	module:  ".",
	bins:    []gobuild.Binary{githubBinary},
	image: func(tag, caBundle, binDir string) imagebuild.Image {
		return entrypointImage(githubBinary, tag, caBundle, binDir)
	},
}
