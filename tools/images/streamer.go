package main

import (
	"sealion.dev/tools/internal/gobuild"
	"sealion.dev/tools/internal/imagebuild"
)

// streamerBinary is the impersonation proxy benchmark's byte streamer, built from the main module.
var streamerBinary = gobuild.Binary{Package: "sealion.dev/fixtures/streamer/cmd/streamer-fixture", Name: "streamer-fixture"}

// streamerImageBuild is the image of the pod the benchmark execs and port-forwards to (make bench).
var streamerImageBuild = goImage{
	name:    "streamer",
	tag:     "localhost/sealion/streamer-fixture:dev",
	archive: "streamer-fixture.tar",
	module:  ".",
	bins:    []gobuild.Binary{streamerBinary},
	image: func(tag, caBundle, binDir string) imagebuild.Image {
		return entrypointImage(streamerBinary, tag, caBundle, binDir)
	},
}
