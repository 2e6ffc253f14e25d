package main

import (
	"runtime"

	"sealion.dev/tools/internal/imagebuild"
	"sealion.dev/tools/internal/serverimage"
)

// serverImageBuild is the sealion server image, from the main module, for this machine's clusters.
var serverImageBuild = goImage{
	name:    "server",
	tag:     "localhost/sealion/pinniped-server:dev",
	archive: "pinniped-server.tar",
	module:  ".",
	bins:    serverimage.Binaries,
	image: func(tag, caBundle, binDir string) imagebuild.Image {
		return serverimage.Image(tag, caBundle, binDir, runtime.GOARCH, serverimage.Binaries)
	},
}
