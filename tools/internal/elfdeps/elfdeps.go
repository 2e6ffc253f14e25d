// Package elfdeps finds the shared libraries a dynamically linked ELF program loads, so that
// programs (iptables for kube-proxy, from unpacked Debian packages) can be copied into an image
// together with what they need. It reads the ELF headers instead of running ldd, so nothing is
// executed, and it works on a file system tree other than the host's.

package elfdeps

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// DefaultDirs are the library directories the dynamic loader searches on Debian for the host's
// architecture (the multiarch directories first).
func DefaultDirs() []string {
	triple := map[string]string{
		"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "ppc64le": "powerpc64le-linux-gnu",
		"s390x": "s390x-linux-gnu", "riscv64": "riscv64-linux-gnu",
	}[runtime.GOARCH]
	var dirs []string
	if triple != "" {
		dirs = append(dirs, "/lib/"+triple, "/usr/lib/"+triple)
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// Needed returns the paths of the program interpreter and of every shared library the given ELF
// files need, directly or through other libraries, each once, in discovery order. Files, dirs and
// the result are paths inside the tree at root ("/" for the host's); symlinks resolve inside it.
// A statically linked file needs nothing.
func Needed(root string, files []string, dirs []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	queue := append([]string(nil), files...)
	for len(queue) > 0 {
		file := queue[0]
		queue = queue[1:]
		interp, libs, err := dynamicInfo(root, file)
		if err != nil {
			return nil, err
		}
		if interp != "" && !seen[interp] {
			seen[interp] = true
			out = append(out, interp)
		}
		for _, lib := range libs {
			p, err := find(root, lib, dirs)
			if err != nil {
				return nil, fmt.Errorf("%s needs %s: %w", file, lib, err)
			}
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
				queue = append(queue, p)
			}
		}
	}
	return out, nil
}

func dynamicInfo(root, file string) (interp string, libs []string, err error) {
	real, err := securejoin.SecureJoin(root, file)
	if err != nil {
		return "", nil, err
	}
	f, err := elf.Open(real)
	if err != nil {
		return "", nil, fmt.Errorf("reading ELF file %s: %w", file, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		buf := make([]byte, p.Filesz)
		if _, err := p.ReadAt(buf, 0); err != nil {
			return "", nil, fmt.Errorf("reading the interpreter of %s: %w", file, err)
		}
		interp = string(buf[:len(buf)-1]) // NUL-terminated
	}
	libs, err = f.ImportedLibraries()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return "", nil, fmt.Errorf("reading the libraries %s needs: %w", file, err)
	}
	return interp, libs, nil
}

func find(root, lib string, dirs []string) (string, error) {
	if path.IsAbs(lib) {
		return lib, nil
	}
	for _, d := range dirs {
		p := path.Join(d, lib)
		real, err := securejoin.SecureJoin(root, p)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(real); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in %v", dirs)
}
