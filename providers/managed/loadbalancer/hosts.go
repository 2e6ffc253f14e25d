package loadbalancer

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

// The controller's hostnames live between these two lines; nothing else in the file is touched.
const (
	hostsBegin = "# BEGIN sealion LoadBalancer hostnames: written by the sealion load balancer controller, removed when it stops"
	hostsEnd   = "# END sealion LoadBalancer hostnames"
)

// hostsFile keeps the controller's block of "IP hostname" lines in a hosts file.
type hostsFile string

// read returns the entries of the block, empty when the file or the block does not exist.
func (h hostsFile) read() (map[string]netip.Addr, error) {
	content, err := os.ReadFile(string(h))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]netip.Addr{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading hosts file: %w", err)
	}
	_, block, _, err := splitBlock(content)
	if err != nil {
		return nil, fmt.Errorf("reading hosts file %s: %w", h, err)
	}
	return parseBlock(block), nil
}

// write makes the block hold exactly entries (hostname -> address), and removes it when entries is
// empty. The file is left alone when it already says that.
//
// The file is rewritten in place rather than replaced by a rename, because /etc/hosts in a
// container is often a bind mount, which cannot be renamed over.
func (h hostsFile) write(entries map[string]netip.Addr) error {
	content, err := os.ReadFile(string(h))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading hosts file: %w", err)
	}
	updated, err := replaceBlock(content, entries)
	if err != nil {
		return fmt.Errorf("updating hosts file %s: %w", h, err)
	}
	if bytes.Equal(updated, content) {
		return nil
	}
	if err := os.WriteFile(string(h), updated, 0o644); err != nil {
		return fmt.Errorf("writing hosts file: %w", err)
	}
	return nil
}

// splitBlock cuts content into what precedes the block, the block's lines between the markers,
// and what follows it. Without a block, before is all of content.
func splitBlock(content []byte) (before, block, after []byte, err error) {
	start, bodyStart := findLine(content, hostsBegin)
	if start < 0 {
		if s, _ := findLine(content, hostsEnd); s >= 0 {
			return nil, nil, nil, errors.New("found the end marker of the load balancer block without its begin marker")
		}
		return content, nil, nil, nil
	}
	end, afterStart := findLine(content[bodyStart:], hostsEnd)
	if end < 0 {
		return nil, nil, nil, errors.New("the load balancer block has no end marker; remove its lines by hand")
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

// replaceBlock puts a block with entries where the old block was, or at the end of content.
func replaceBlock(content []byte, entries map[string]netip.Addr) ([]byte, error) {
	before, _, after, err := splitBlock(content)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(before)
	if len(entries) > 0 {
		if b.Len() > 0 && !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
			b.WriteByte('\n')
		}
		b.WriteString(hostsBegin + "\n")
		names := make([]string, 0, len(entries))
		for name := range entries {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			fmt.Fprintf(&b, "%s\t%s\n", entries[name], name)
		}
		b.WriteString(hostsEnd + "\n")
	}
	b.Write(after)
	return b.Bytes(), nil
}
