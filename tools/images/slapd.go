package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"sealion.dev/tools/internal/debpkg"
	"sealion.dev/tools/internal/elfdeps"
	"sealion.dev/tools/internal/imagebuild"
)

// slapdPackage is the Debian package the LDAP fixture's image takes slapd, its modules and its
// schema files from; the libraries come from the packages it depends on.
const slapdPackage = "slapd"

// Paths of Debian's slapd that the fixture's slapd.conf names (fixtures/ldap): the program, the
// modules it loads from the module directory, and the schema files it includes, all at the paths
// Debian installs them to, so one configuration serves both the host's slapd and the image's.
const (
	slapdProgram   = "/usr/sbin/slapd"
	slapdModuleDir = "/usr/lib/ldap"
	slapdSchemaDir = "/etc/ldap/schema"
)

// slapdModules are the modules the fixture loads (moduleload back_mdb, memberof). slapd opens each
// by name through libltdl, which takes <name>.so when there is no <name>.la, so the image carries
// that symlink and the versioned library it names, and no .la files.
var slapdModules = []string{"back_mdb", "memberof"}

// slapdDlopened are libraries slapd needs that no ELF header names: glibc loads libgcc_s when a
// thread exits (pthread_exit unwinds with it), and aborts slapd without it.
var slapdDlopened = []string{"libgcc_s.so.1"}

// runSlapd builds the image that runs the LDAP fixture in a cluster (fixtures/ldap/incluster),
// for clusters whose pods cannot reach this machine.
func runSlapd(args []string) error {
	fl := flag.NewFlagSet("slapd", flag.ExitOnError)
	repoRoot := fl.String("repo-root", "..", "root of the main module (sealion.dev)")
	tag := fl.String("tag", "localhost/sealion/slapd-fixture:dev", "image name and tag")
	output := fl.String("output", "", "archive to write (default <repo-root>/_output/images/slapd-fixture.tar)")
	cacheDir := fl.String("cache-dir", defaultCacheDir(), "cache root for Debian's packages (default $SEALION_CACHE or ~/.cache/sealion)")
	caBundle := fl.String("ca-bundle", defaultCABundle, "CA bundle copied to /etc/ssl/certs/ca-certificates.crt")
	force := fl.Bool("force", false, "rebuild the archive even when it is up to date")
	fl.Parse(args)

	if *output == "" {
		*output = filepath.Join(*repoRoot, "_output", "images", "slapd-fixture.tar")
	}
	root, err := debpkg.Cache{Dir: filepath.Join(*cacheDir, "debian")}.Unpack(context.Background(), slapdPackage)
	if err != nil {
		return fmt.Errorf("the LDAP fixture's slapd: %w", err)
	}
	img, err := slapdImage(*tag, *caBundle, root)
	if err != nil {
		return err
	}
	return writeIfStale(img, *output, *force)
}

// slapdImage packs slapd, the modules the fixture loads, the schema files and the shared
// libraries of all of them (slapdDlopened too) from root, the unpacked packages. It runs as
// nonroot: the fixture listens on unprivileged ports and keeps its database in a volume the pod
// mounts. Its entrypoint is slapd, so pods give only slapd's flags.
func slapdImage(tag, caBundle, root string) (imagebuild.Image, error) {
	// Each module's .so is a symlink to its versioned library: both the reading of its ELF
	// header and RootPath follow it inside root.
	elfs := []string{slapdProgram}
	for _, m := range slapdModules {
		elfs = append(elfs, path.Join(slapdModuleDir, m+".so"))
	}
	for _, lib := range slapdDlopened {
		p, err := findLibrary(root, lib)
		if err != nil {
			return imagebuild.Image{}, err
		}
		elfs = append(elfs, p)
	}
	libs, err := elfdeps.Needed(root, elfs, elfdeps.DefaultDirs())
	if err != nil {
		return imagebuild.Image{}, fmt.Errorf("finding the libraries of slapd and its modules: %w", err)
	}
	l := imagebuild.NewLayer().RootPath(root, slapdSchemaDir)
	for _, p := range append(elfs, libs...) {
		l.RootPath(root, p)
	}
	return imagebuild.Image{
		Ref:    tag,
		Layers: []*imagebuild.Layer{imagebuild.Base(caBundle), l},
		Config: imagebuild.Config{
			Entrypoint: []string{slapdProgram},
			Env:        []string{imagebuild.DefaultPath},
			User:       imagebuild.NonrootUser,
			WorkingDir: "/home/nonroot",
		},
	}, nil
}

// findLibrary is the path in root of the library named lib, in the loader's directories.
func findLibrary(root, lib string) (string, error) {
	for _, d := range elfdeps.DefaultDirs() {
		if _, err := os.Stat(filepath.Join(root, d, lib)); err == nil {
			return path.Join(d, lib), nil
		}
	}
	return "", fmt.Errorf("no %s in %s (%v)", lib, root, elfdeps.DefaultDirs())
}
