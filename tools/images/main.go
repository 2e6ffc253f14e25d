// Command images builds the images of the clusters and the fixtures without a registry (the
// server image is the release's, tools/release). The cluster and fixture images are built
// without a container engine, each written as a docker-archive tarball, the format
// `ctr -n k8s.io images import` and `kind load image-archive` read; the kind node image, made
// from those, is handed to Docker. Run it from the tools module:
//
//	go run ./images cluster [--kube-version v1.33.13] [--cache-dir DIR]
//	    the images kubeadm lists for the version (control plane, kube-proxy, etcd, pause, CoreDNS),
//	    into <cache-dir>/images/<version>/<component>.tar; up-to-date archives are kept
//	go run ./images dex [--repo-root ..] [--tag localhost/sealion/dex-fixture:dev]
//	    the Dex fixture's image (fixtures/dex/server, entrypoint dex-fixture), for clusters whose
//	    pods cannot reach this machine, into <repo-root>/_output/images/dex-fixture.tar
//	go run ./images slapd [--repo-root ..] [--tag localhost/sealion/slapd-fixture:dev] [--cache-dir DIR]
//	    the LDAP fixture's image (Debian's slapd, unpacked from its packages, with the modules and
//	    schema files fixtures/ldap loads), for clusters whose pods cannot reach this machine, into
//	    <repo-root>/_output/images/slapd-fixture.tar
//	go run ./images github [--repo-root ..] [--tag localhost/sealion/github-fixture:dev]
//	    the GitHub double's image (fixtures/github/cmd/github-fixture, its entrypoint), for the
//	    same clusters, into <repo-root>/_output/images/github-fixture.tar
//	go run ./images streamer [--repo-root ..] [--tag localhost/sealion/streamer-fixture:dev]
//	    the byte streamer the impersonation proxy benchmark execs and port-forwards to
//	    (fixtures/streamer/cmd/streamer-fixture), into <repo-root>/_output/images/streamer-fixture.tar
//	go run ./images push [--registry REGISTRY/PREFIX] [--insecure] ARCHIVE...
//	    pushes image archives (docker archives, or a release's server image, an OCI layout of one
//	    index) to the registry named by the flag or $SEALION_REGISTRY, each as
//	    <prefix>/<name>:<tag>, and prints "<archive's ref> <pushed ref by digest>" per archive;
//	    credentials come from the Docker config, as docker login wrote them
//	go run ./images registry [--listen 127.0.0.1:0]
//	    serves an image registry in memory until interrupted, printing its address, for clusters
//	    on this machine to pull pushed images from, as a cloud's nodes pull from the user's
//	go run ./images kind-node [--kube-version v1.33.13] [--cache-dir DIR]
//	    a kind node image from those binaries and cluster images, loaded into Docker as
//	    localhost/sealion/kind-node:<version> (needs root, Docker and debootstrap); kept when up to date
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// defaultCABundle is Debian's bundle of public CAs (package ca-certificates).
const defaultCABundle = "/etc/ssl/certs/ca-certificates.crt"

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "cluster":
		err = runCluster(os.Args[2:])
	case "dex":
		err = dexImageBuild.run(os.Args[2:])
	case "slapd":
		err = runSlapd(os.Args[2:])
	case "github":
		err = githubImageBuild.run(os.Args[2:])
	case "streamer":
		err = streamerImageBuild.run(os.Args[2:])
	case "kind-node":
		err = runKindNode(os.Args[2:])
	case "registry":
		err = runRegistry(os.Args[2:], os.Stdout)
	case "push":
		err = runPush(context.Background(), os.Args[2:], os.Stdout)
	case "help", "-h", "-help", "--help":
		usage()
		return
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: images cluster|dex|slapd|github|streamer|kind-node|push|registry [flags]
  cluster    images kubeadm expects for a Kubernetes version, from the cached Kubernetes binaries
  dex        the Dex fixture's image, from fixtures/dex/server, to run Dex in a cluster
  slapd      the LDAP fixture's image, Debian's slapd, to run the LDAP directory in a cluster
  github     the GitHub double's image, from fixtures/github, to run it in a cluster
  streamer   the byte streamer's image, from fixtures/streamer, for the proxy benchmark
  kind-node  a kind node image from the cached binaries and cluster images, loaded into Docker
  push       image archives to a registry (--registry or $SEALION_REGISTRY), printed by digest
  registry   serves an image registry in memory on a local address until interrupted
Run "images <command> -h" for the flags of a command.
`)
}

// defaultCacheDir honours SEALION_CACHE, then the user cache directory, as kubebuild does.
func defaultCacheDir() string {
	if d := os.Getenv("SEALION_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "sealion")
	}
	return filepath.Join(os.TempDir(), "sealion-cache")
}
