// Package imagebuild assembles container images from files on the build host, without a container
// engine, and writes them as docker-archive tarballs that containerd (`ctr images import`), Docker
// and `kind load image-archive` accept. Every entry gets fixed ownership and timestamps and entries
// are written in sorted order, so equal inputs give byte-identical images that can be cached.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Epoch is the modification time of every file and the creation time of every image.
var Epoch = time.Unix(0, 0).UTC()

// maxSymlinks bounds symlink resolution on the host, as the kernel's ELOOP limit does.
const maxSymlinks = 40

type entryKind int

const (
	kindDir entryKind = iota
	kindFile
	kindSymlink
)

type entry struct {
	kind     entryKind
	mode     fs.FileMode // permission bits, plus fs.ModeSticky
	uid, gid int
	data     []byte // literal file content, when src is empty
	src      string // host file whose content is copied
	target   string // symlink target
	implicit bool   // a directory created only as the parent of another entry
}

// Layer is a filesystem tree packed as one image layer. Paths are absolute inside the image;
// missing parent directories are added with mode 0755. The first error (a conflicting entry, an
// unreadable host file) is kept and returned by Build, so recipes read as a plain list of entries.
type Layer struct {
	entries map[string]*entry
	err     error
}

// NewLayer returns an empty layer.
func NewLayer() *Layer {
	return &Layer{entries: map[string]*entry{}}
}

// Dir adds a directory owned by root.
func (l *Layer) Dir(p string, mode fs.FileMode) *Layer {
	return l.OwnedDir(p, mode, 0, 0)
}

// OwnedDir adds a directory owned by uid:gid, such as a non-root user's home.
func (l *Layer) OwnedDir(p string, mode fs.FileMode, uid, gid int) *Layer {
	l.add(p, &entry{kind: kindDir, mode: mode, uid: uid, gid: gid})
	return l
}

// File adds a root-owned file with the given content.
func (l *Layer) File(p string, mode fs.FileMode, data []byte) *Layer {
	l.add(p, &entry{kind: kindFile, mode: mode, data: data})
	return l
}

// CopyFile adds the host file src at p, keeping its permission bits. Symlinks in src are followed.
func (l *Layer) CopyFile(p, src string) *Layer {
	fi, err := os.Stat(src)
	if err != nil {
		l.fail(fmt.Errorf("adding %s: %w", p, err))
		return l
	}
	if !fi.Mode().IsRegular() {
		l.fail(fmt.Errorf("adding %s: %s is not a regular file", p, src))
		return l
	}
	l.add(p, &entry{kind: kindFile, mode: fi.Mode().Perm(), src: src})
	return l
}

// Symlink adds a symbolic link.
func (l *Layer) Symlink(p, target string) *Layer {
	l.add(p, &entry{kind: kindSymlink, target: target})
	return l
}

// HostPath copies the host path p to the same path in the layer, the way the host resolves it:
// every symlink met on the way (such as Debian's /lib -> usr/lib) is added as a symlink and its
// target copied too. Directories are copied with their contents.
func (l *Layer) HostPath(p string) *Layer {
	return l.RootPath("/", p)
}

// RootPath is HostPath for a file system tree at root on the host (unpacked Debian packages, say):
// p and every symlink target are read as paths inside root, and p lands at the same path in the
// layer.
func (l *Layer) RootPath(root, p string) *Layer {
	if err := l.rootPath(root, p); err != nil {
		l.fail(fmt.Errorf("copying %s of %s: %w", p, root, err))
	}
	return l
}

func (l *Layer) rootPath(root, p string) error {
	real, err := l.resolve(root, p, 0)
	if err != nil {
		return err
	}
	src := filepath.Join(root, real)
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode().IsRegular():
		l.add(real, &entry{kind: kindFile, mode: fi.Mode().Perm(), src: src})
	case fi.IsDir():
		l.add(real, &entry{kind: kindDir, mode: fi.Mode().Perm() | fi.Mode()&fs.ModeSticky})
		children, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, c := range children {
			if err := l.rootPath(root, path.Join(real, c.Name())); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%s has unsupported type %s", src, fi.Mode().Type())
	}
	return nil
}

// resolve returns p with all symlinks resolved inside root, adding each symlink it passes.
func (l *Layer) resolve(root, p string, followed int) (string, error) {
	if followed > maxSymlinks {
		return "", fmt.Errorf("too many levels of symbolic links resolving %s", p)
	}
	parts := strings.Split(strings.TrimPrefix(path.Clean("/"+p), "/"), "/")
	cur := "/"
	for i, part := range parts {
		next := path.Join(cur, part)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		l.add(next, &entry{kind: kindSymlink, target: target})
		if !path.IsAbs(target) {
			target = path.Join(cur, target)
		}
		return l.resolve(root, path.Join(append([]string{target}, parts[i+1:]...)...), followed+1)
	}
	return cur, nil
}

func (l *Layer) fail(err error) {
	if l.err == nil {
		l.err = err
	}
}

// add records e at p, creating parents; adding an identical entry again is allowed.
func (l *Layer) add(p string, e *entry) {
	if !path.IsAbs(p) {
		l.fail(fmt.Errorf("image path %q is not absolute", p))
		return
	}
	p = path.Clean(p)
	if p == "/" {
		l.fail(errors.New("the image root cannot be an entry"))
		return
	}
	for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
		if old, ok := l.entries[dir]; ok {
			if old.kind != kindDir {
				l.fail(fmt.Errorf("adding %s: parent %s is not a directory in the image", p, dir))
				return
			}
			continue
		}
		l.entries[dir] = &entry{kind: kindDir, mode: 0o755, implicit: true}
	}
	if old, ok := l.entries[p]; ok {
		if old.implicit && e.kind == kindDir {
			*old = *e
			return
		}
		if !sameEntry(old, e) {
			l.fail(fmt.Errorf("conflicting entries for %s in the image", p))
		}
		return
	}
	l.entries[p] = e
}

func sameEntry(a, b *entry) bool {
	return a.kind == b.kind && a.mode == b.mode && a.uid == b.uid && a.gid == b.gid &&
		a.src == b.src && a.target == b.target && bytes.Equal(a.data, b.data)
}

func (l *Layer) paths() []string {
	ps := make([]string, 0, len(l.entries))
	for p := range l.entries {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// Inputs lists the host files whose content the layer copies.
func (l *Layer) Inputs() []string {
	var in []string
	for _, p := range l.paths() {
		if src := l.entries[p].src; src != "" {
			in = append(in, src)
		}
	}
	return in
}

// describe writes a line per entry: everything that defines the layer except the content of
// host files, which is tracked through their modification times.
func (l *Layer) describe(w io.Writer) {
	for _, p := range l.paths() {
		e := l.entries[p]
		sum := sha256.Sum256(e.data)
		fmt.Fprintf(w, "%s %d %o %d:%d src=%q target=%q data=%s\n", p, e.kind, e.mode, e.uid, e.gid, e.src, e.target, hex.EncodeToString(sum[:]))
	}
}

// WriteTar writes the layer as an uncompressed tar stream.
func (l *Layer) WriteTar(w io.Writer) error {
	if l.err != nil {
		return l.err
	}
	tw := tar.NewWriter(w)
	for _, p := range l.paths() {
		if err := writeEntry(tw, p, l.entries[p]); err != nil {
			return fmt.Errorf("writing %s into the layer: %w", p, err)
		}
	}
	return tw.Close()
}

func writeEntry(tw *tar.Writer, p string, e *entry) error {
	h := &tar.Header{
		Name:    strings.TrimPrefix(p, "/"),
		Mode:    tarMode(e.mode),
		Uid:     e.uid,
		Gid:     e.gid,
		ModTime: Epoch,
		Format:  tar.FormatPAX,
	}
	switch e.kind {
	case kindDir:
		h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		return tw.WriteHeader(h)
	case kindSymlink:
		h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.target, 0o777
		return tw.WriteHeader(h)
	}
	h.Typeflag = tar.TypeReg
	if e.src == "" {
		h.Size = int64(len(e.data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(e.data)
		return err
	}
	f, err := os.Open(e.src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	h.Size = fi.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}

// Build packs the layer, gzip-compressed once in memory so the digest and the archive share it.
func (l *Layer) Build() (v1.Layer, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if err := l.WriteTar(zw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	blob := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(blob)), nil
	})
}
