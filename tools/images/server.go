package main

import (
	"flag"
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

func runServer(args []string) error {
	fl := flag.NewFlagSet("server", flag.ExitOnError)
	repoRoot := fl.String("repo-root", "..", "root of the main module (sealion.dev)")
	tag := fl.String("tag", "localhost/sealion/pinniped-server:dev", "image name and tag")
	output := fl.String("output", "", "archive to write (default <repo-root>/_output/images/pinniped-server.tar)")
	caBundle := fl.String("ca-bundle", defaultCABundle, "CA bundle copied to /etc/ssl/certs/ca-certificates.crt")
	force := fl.Bool("force", false, "rebuild the archive even when it is up to date")
	fl.Parse(args)

	outDir := filepath.Join(*repoRoot, "_output", "images")
	if *output == "" {
		*output = filepath.Join(outDir, "pinniped-server.tar")
	}
	binDir := filepath.Join(outDir, "bin")
	if err := buildGo(*repoRoot, binDir, serverBinaries); err != nil {
		return err
	}
	return writeIfStale(serverImage(*tag, *caBundle, binDir, serverBinaries), *output, *force)
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
