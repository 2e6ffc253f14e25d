package main

import (
	"path/filepath"

	"sealion.dev/tools/internal/imagebuild"
)

// serverBinaries are the programs of the server image, built from the main module into
// /usr/local/bin. The kube cert agent is here so that its pod can run this image, the Concierge's
// default for it.
var serverBinaries = []goBinary{
	{Package: "sealion.dev/servers/concierge", Name: "pinniped-concierge"},
	{Package: "sealion.dev/servers/supervisor", Name: "pinniped-supervisor"},
	{Package: "sealion.dev/servers/kube-cert-agent", Name: "pinniped-concierge-kube-cert-agent"},
	{Package: "sealion.dev/servers/local-user-authenticator", Name: "local-user-authenticator"},
}

// serverImageBuild is the sealion server image, from the main module.
var serverImageBuild = goImage{
	name:    "server",
	tag:     "localhost/sealion/pinniped-server:dev",
	archive: "pinniped-server.tar",
	module:  ".",
	bins:    serverBinaries,
	image: func(tag, caBundle, binDir string) imagebuild.Image {
		return serverImage(tag, caBundle, binDir, serverBinaries)
	},
}

// serverImage runs as the unprivileged nonroot user and has no shell; pods name the binary to run.
func serverImage(tag, caBundle, binDir string, bins []goBinary) imagebuild.Image {
	layer := imagebuild.NewLayer()
	for _, b := range bins {
		layer.CopyFile("/usr/local/bin/"+b.Name, filepath.Join(binDir, b.Name))
	}
	return imagebuild.Image{
		Ref:    tag,
		Layers: []*imagebuild.Layer{baseLayer(caBundle), layer},
		Config: imagebuild.Config{
			Env:        []string{imagebuild.DefaultPath},
			User:       nonrootUser,
			WorkingDir: "/home/nonroot",
		},
	}
}
