// Package gobuild builds our Go programs for images and releases: static (cgo off), reproducible
// (the same sources give the same bytes), for the platform asked.
package gobuild

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Binary is a main package to build.
type Binary struct {
	// Package is the import path of the main package.
	Package string
	// Name is the file name of the binary.
	Name string
}

// ReproducibleFlags give the same bytes for the same sources: no paths, VCS stamps or build IDs.
var ReproducibleFlags = []string{"-trimpath", "-buildvcs=false"}

// reproducibleLDFlags strip the symbol table and the build ID; Target.LDFlags come after them.
const reproducibleLDFlags = "-s -w -buildid="

// Target is the platform to build for, with further linker flags (version stamps).
type Target struct {
	OS, Arch string
	LDFlags  []string
}

// BuildArgs are the arguments of `go build` for target, writing out from pkg.
func BuildArgs(target Target, out, pkg string) []string {
	ldflags := strings.Join(append([]string{reproducibleLDFlags}, target.LDFlags...), " ")
	args := append([]string{"build"}, ReproducibleFlags...)
	return append(args, "-ldflags="+ldflags, "-o", out, pkg)
}

// Build builds bins for target from the module in moduleDir into outDir. A binary whose bytes did
// not change keeps its file and modification time, so archives packing it stay up to date.
func Build(moduleDir, outDir string, target Target, bins []Binary) error {
	// The go tool runs in moduleDir, so its -o must not be relative to ours.
	outDir, err := filepath.Abs(outDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(outDir, ".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, b := range bins {
		if err := Go(moduleDir, []string{"GOOS=" + target.OS, "GOARCH=" + target.Arch}, BuildArgs(target, filepath.Join(tmp, b.Name), b.Package)...); err != nil {
			return fmt.Errorf("building %s for %s/%s in %s: %w", b.Package, target.OS, target.Arch, moduleDir, err)
		}
		if err := replaceIfChanged(filepath.Join(tmp, b.Name), filepath.Join(outDir, b.Name)); err != nil {
			return err
		}
	}
	return nil
}

// Go runs the go tool in dir with cgo off, so binaries run on images without a libc, and with
// env added to ours; its output goes to stderr, after the command line.
func Go(dir string, env []string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
	fmt.Fprintf(os.Stderr, "(cd %s && %s go %s)\n", dir, strings.Join(env, " "), strings.Join(args, " "))
	return cmd.Run()
}

func replaceIfChanged(src, dst string) error {
	next, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if cur, err := os.ReadFile(dst); err == nil && bytes.Equal(cur, next) {
		return nil
	}
	return os.Rename(src, dst)
}
