// Package serverimage is what our server image holds: the programs of the Concierge, the
// Supervisor, the kube cert agent and the local-user-authenticator, on the shared base, run as
// nonroot, with no shell. `images server` builds it for this machine's clusters and `release` for
// each released architecture.
package serverimage

import (
	"path/filepath"

	"sealion.dev/tools/internal/gobuild"
	"sealion.dev/tools/internal/imagebuild"
)

// Binaries are the programs of the server image, built from the main module into /usr/local/bin.
// The kube cert agent is here so that its pod can run this image, the Concierge's default for it.
var Binaries = []gobuild.Binary{
	{Package: "sealion.dev/servers/concierge", Name: "pinniped-concierge"},
	{Package: "sealion.dev/servers/supervisor", Name: "pinniped-supervisor"},
	{Package: "sealion.dev/servers/kube-cert-agent", Name: "pinniped-concierge-kube-cert-agent"},
	{Package: "sealion.dev/servers/local-user-authenticator", Name: "local-user-authenticator"},
}

// Image packs bins, found in binDir and built for arch, under tag; pods name the binary to run.
func Image(tag, caBundle, binDir, arch string, bins []gobuild.Binary) imagebuild.Image {
	layer := imagebuild.NewLayer()
	for _, b := range bins {
		layer.CopyFile("/usr/local/bin/"+b.Name, filepath.Join(binDir, b.Name))
	}
	return imagebuild.Image{
		Ref:    tag,
		Layers: []*imagebuild.Layer{imagebuild.Base(caBundle), layer},
		Config: imagebuild.Config{
			Env:        []string{imagebuild.DefaultPath},
			User:       imagebuild.NonrootUser,
			WorkingDir: "/home/nonroot",
		},
		Arch: arch,
	}
}
