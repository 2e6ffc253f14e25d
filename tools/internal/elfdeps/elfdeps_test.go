package elfdeps

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// hostProgram is a dynamically linked program every Debian host has.
const hostProgram = "/bin/ls"

func requireHostProgram(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(hostProgram); err != nil {
		t.Skipf("%s is not on this host: %v", hostProgram, err)
	}
}

func TestNeededOfHostProgram(t *testing.T) {
	requireHostProgram(t)
	prog := hostProgram
	libs, err := Needed("/", []string{prog}, DefaultDirs())
	if err != nil {
		t.Fatal(err)
	}
	var libc, interp bool
	seen := map[string]bool{}
	for _, l := range libs {
		if seen[l] {
			t.Errorf("%s listed twice", l)
		}
		seen[l] = true
		if _, err := os.Stat(l); err != nil {
			t.Errorf("listed library %s does not exist: %v", l, err)
		}
		libc = libc || path.Base(l) == "libc.so.6"
		interp = interp || strings.HasPrefix(path.Base(l), "ld-linux")
	}
	if !libc || !interp {
		t.Errorf("Needed(%s) = %v; want libc.so.6 and the ld-linux interpreter", prog, libs)
	}
}

func TestNeededErrors(t *testing.T) {
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		files    []string
		dirs     []string
		hostProg bool
		want     string
	}{
		{name: "not an ELF file", files: []string{notELF}, dirs: DefaultDirs(), want: "reading ELF file"},
		{name: "missing file", files: []string{"/nonexistent/prog"}, dirs: DefaultDirs(), want: "/nonexistent/prog"},
		{name: "library outside the search dirs", files: []string{hostProgram}, dirs: []string{t.TempDir()}, hostProg: true, want: "not found in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.hostProg {
				requireHostProgram(t)
			}
			_, err := Needed("/", tt.files, tt.dirs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Needed error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestNeededInsideRoot copies a host program and its libraries into a tree where each library is
// an absolute symlink into /store. Those links only resolve inside the tree, so Needed finding them
// all shows it reads the tree and never the host.
func TestNeededInsideRoot(t *testing.T) {
	requireHostProgram(t)
	hostLibs, err := Needed("/", []string{hostProgram}, DefaultDirs())
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	copyInto := func(dst, src string) {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyInto(filepath.Join(root, "prog"), hostProgram)
	for _, lib := range hostLibs {
		store := "/store/" + path.Base(lib)
		copyInto(filepath.Join(root, store), lib)
		if err := os.MkdirAll(filepath.Join(root, path.Dir(lib)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(store, filepath.Join(root, lib)); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	got, err := Needed(root, []string{"/prog"}, DefaultDirs())
	if err != nil {
		t.Fatalf("Needed inside %s: %v", root, err)
	}
	if strings.Join(got, " ") != strings.Join(hostLibs, " ") {
		t.Errorf("Needed inside the tree = %v, want the host's list %v", got, hostLibs)
	}
}
