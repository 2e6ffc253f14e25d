package hostsblock

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testFile has markers like a real caller's.
func testFile(path string) File {
	return File{Path: path, Begin: "# BEGIN test hostnames", End: "# END test hostnames"}
}

func TestReplace(t *testing.T) {
	f := testFile("")
	hostsBegin, hostsEnd := f.Begin, f.End
	block := func(lines ...string) string {
		return hostsBegin + "\n" + strings.Join(lines, "") + hostsEnd + "\n"
	}
	one := map[string]netip.Addr{"a.ns.elb.test": netip.MustParseAddr("127.0.10.1")}
	two := map[string]netip.Addr{
		"b.ns.elb.test": netip.MustParseAddr("127.0.10.2"),
		"a.ns.elb.test": netip.MustParseAddr("127.0.10.1"),
	}
	tests := []struct {
		name    string
		content string
		entries map[string]netip.Addr
		want    string
		wantErr string
	}{
		{name: "empty file gets a block", entries: one,
			want: block("127.0.10.1\ta.ns.elb.test\n")},
		{name: "appended after existing lines, sorted by hostname", content: "127.0.0.1 localhost\n", entries: two,
			want: "127.0.0.1 localhost\n" + block("127.0.10.1\ta.ns.elb.test\n", "127.0.10.2\tb.ns.elb.test\n")},
		{name: "a missing final newline is added before the block", content: "127.0.0.1 localhost", entries: one,
			want: "127.0.0.1 localhost\n" + block("127.0.10.1\ta.ns.elb.test\n")},
		{name: "replaced in place, surroundings kept", content: "# top\n" + block("127.0.10.9\told.test\n") + "10.0.0.1 other\n", entries: one,
			want: "# top\n" + block("127.0.10.1\ta.ns.elb.test\n") + "10.0.0.1 other\n"},
		{name: "removed when empty", content: "# top\n" + block("127.0.10.9\told.test\n") + "10.0.0.1 other\n",
			want: "# top\n10.0.0.1 other\n"},
		{name: "block with CRLF line ends is found", content: "# top\r\n" + hostsBegin + "\r\n127.0.10.9 old.test\r\n" + hostsEnd + "\r\n# tail\r\n",
			want: "# top\r\n# tail\r\n"},
		{name: "nothing to remove", content: "127.0.0.1 localhost\n", want: "127.0.0.1 localhost\n"},
		{name: "begin marker without end", content: hostsBegin + "\n127.0.10.1 a\n", entries: one, wantErr: "no end marker"},
		{name: "end marker without begin", content: "127.0.10.1 a\n" + hostsEnd + "\n", wantErr: "without its begin marker"},
		{name: "marker text inside another line is not a marker", content: "# see " + hostsEnd + "\n", want: "# see " + hostsEnd + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.replace([]byte(tt.content), tt.entries)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("replace() error = %v; want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("replace() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	h := testFile(path)

	got, err := h.Read()
	if err != nil || len(got) != 0 {
		t.Fatalf("Read() of a missing file = %v, %v; want no entries", got, err)
	}
	const original = "127.0.0.1 localhost\n::1 localhost ip6-localhost\n"
	if err := os.WriteFile(path, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	entries := map[string]netip.Addr{
		"a.ns.elb.test": netip.MustParseAddr("127.0.10.1"),
		"b.ns.elb.test": netip.MustParseAddr("127.0.10.2"),
	}
	if err := h.Write(entries); err != nil {
		t.Fatal(err)
	}
	if got, err = h.Read(); err != nil || len(got) != 2 || got["a.ns.elb.test"] != entries["a.ns.elb.test"] || got["b.ns.elb.test"] != entries["b.ns.elb.test"] {
		t.Fatalf("Read() = %v, %v; want %v", got, err, entries)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("file mode after write = %v, %v; want the original 0600", info.Mode(), err)
	}

	if err := h.Write(nil); err != nil {
		t.Fatal(err)
	}
	if content, _ := os.ReadFile(path); string(content) != original {
		t.Fatalf("after removing the block the file is\n%s\nwant the original\n%s", content, original)
	}
}
