// Package hostsblock keeps a program's own block of "IP hostname" lines in a hosts file, between
// two marker lines, and leaves every other line alone. It is how the simulated managed clusters
// make hostnames resolvable on this machine without a DNS server; removing the block undoes it.
package hostsblock

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"strings"
)

// File is one block of a hosts file: the lines between the markers Begin and End, each a whole
// line of its own. Each program that keeps a block uses its own markers, so blocks never mix.
type File struct {
	// Path is the hosts file, /etc/hosts for the machine's own.
	Path string
	// Begin and End are the marker lines, comments ("# ...") so that resolvers skip them.
	Begin, End string
}

// Read returns the entries of the block, empty when the file or the block does not exist.
func (f File) Read() (map[string]netip.Addr, error) {
	content, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]netip.Addr{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading hosts file: %w", err)
	}
	_, block, _, err := f.split(content)
	if err != nil {
		return nil, fmt.Errorf("reading hosts file %s: %w", f.Path, err)
	}
	return parseBlock(block), nil
}

// Write makes the block hold exactly entries (hostname -> address), and removes it when entries is
// empty. The file is left alone when it already says that.
//
// The file is rewritten in place rather than replaced by a rename, because /etc/hosts in a
// container is often a bind mount, which cannot be renamed over.
func (f File) Write(entries map[string]netip.Addr) error {
	content, err := os.ReadFile(f.Path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading hosts file: %w", err)
	}
	updated, err := f.replace(content, entries)
	if err != nil {
		return fmt.Errorf("updating hosts file %s: %w", f.Path, err)
	}
	if bytes.Equal(updated, content) {
		return nil
	}
	if err := os.WriteFile(f.Path, updated, 0o644); err != nil {
		return fmt.Errorf("writing hosts file: %w", err)
	}
	return nil
}

// split cuts content into what precedes the block, the block's lines between the markers,
// and what follows it. Without a block, before is all of content.
func (f File) split(content []byte) (before, block, after []byte, err error) {
	start, bodyStart := findLine(content, f.Begin)
	if start < 0 {
		if s, _ := findLine(content, f.End); s >= 0 {
			return nil, nil, nil, fmt.Errorf("found the end marker %q without its begin marker", f.End)
		}
		return content, nil, nil, nil
	}
	end, afterStart := findLine(content[bodyStart:], f.End)
	if end < 0 {
		return nil, nil, nil, fmt.Errorf("the block beginning %q has no end marker; remove its lines by hand", f.Begin)
	}
	return content[:start], content[bodyStart : bodyStart+end], content[bodyStart+afterStart:], nil
}

// findLine returns where the first line of content that is exactly line starts, and where the line
// after it starts; -1 when there is none.
func findLine(content []byte, line string) (start, next int) {
	for off := 0; off < len(content); {
		l, _, found := bytes.Cut(content[off:], []byte("\n"))
		end := off + len(l)
		if found {
			end++
		}
		if string(bytes.TrimRight(l, "\r")) == line {
			return off, end
		}
		off = end
	}
	return -1, -1
}

func parseBlock(block []byte) map[string]netip.Addr {
	entries := map[string]netip.Addr{}
	for _, line := range strings.Split(string(block), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		addr, err := netip.ParseAddr(fields[0])
		if err != nil {
			continue
		}
		for _, name := range fields[1:] {
			entries[name] = addr
		}
	}
	return entries
}

// replace puts a block with entries where the old block was, or at the end of content.
func (f File) replace(content []byte, entries map[string]netip.Addr) ([]byte, error) {
	before, _, after, err := f.split(content)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(before)
	if len(entries) > 0 {
		if b.Len() > 0 && !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
			b.WriteByte('\n')
		}
		b.WriteString(f.Begin + "\n")
		names := make([]string, 0, len(entries))
		for name := range entries {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			fmt.Fprintf(&b, "%s\t%s\n", entries[name], name)
		}
		b.WriteString(f.End + "\n")
	}
	b.Write(after)
	return b.Bytes(), nil
}
