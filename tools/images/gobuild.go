package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// goBinary is a main package packed into an image.
type goBinary struct {
	// Package is the import path of the main package.
	Package string
	// Name is the file name of the binary in the image.
	Name string
}

// reproducibleFlags give the same bytes for the same sources: no paths, VCS stamps or build IDs.
var reproducibleFlags = []string{"-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid="}

// buildGo builds static binaries for linux on the host's architecture, from the module in
// moduleDir, into outDir. A binary whose bytes did not change keeps its file and modification time,
// so archives packing it stay up to date.
func buildGo(moduleDir, outDir string, bins []goBinary) error {
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
		args := append([]string{"build"}, reproducibleFlags...)
		args = append(args, "-o", filepath.Join(tmp, b.Name), b.Package)
		if err := goCommand(moduleDir, []string{"GOOS=linux", "GOARCH=" + runtime.GOARCH}, args...); err != nil {
			return fmt.Errorf("building %s in %s: %w", b.Package, moduleDir, err)
		}
		if err := replaceIfChanged(filepath.Join(tmp, b.Name), filepath.Join(outDir, b.Name)); err != nil {
			return err
		}
	}
	return nil
}

// goCommand runs the go tool in dir with cgo off, so binaries run on images without a libc.
func goCommand(dir string, env []string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
	fmt.Fprintf(os.Stderr, "images: (cd %s && go %s)\n", dir, strings.Join(args, " "))
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
