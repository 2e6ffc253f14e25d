package debpkg

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseDepends(t *testing.T) {
	out := []byte(`iptables
  Depends: libc6
  Depends: <libxtables12>
libc6
  Depends: libgcc-s1
<debconf-2.0>
libgcc-s1
iptables
`)
	got := parseDepends(out)
	want := []string{"iptables", "libc6", "libgcc-s1"}
	if !slices.Equal(got, want) {
		t.Errorf("parseDepends = %v, want %v", got, want)
	}
}

func TestDebVersion(t *testing.T) {
	for deb, want := range map[string]string{
		"/x/iptables_1.8.9-2_amd64.deb":         "1.8.9-2",
		"libgcc-s1_12.2.0-14+deb12u1_amd64.deb": "12.2.0-14+deb12u1",
		"conntrack_1%3a1.4.7-1+b2_amd64.deb":    "1:1.4.7-1+b2",
	} {
		if got := debVersion(deb); got != want {
			t.Errorf("debVersion(%s) = %q, want %q", deb, got, want)
		}
	}
}

// TestUnpack fetches iptables from Debian (the network to the host's apt sources) into a cache of
// its own: the tree has the program and the libc it needs, and a second call reuses the tree.
func TestUnpack(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: downloads Debian packages")
	}
	c := Cache{Dir: t.TempDir()}
	root, err := c.Unpack(context.Background(), "iptables")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"usr/sbin/xtables-nft-multi", "usr/sbin/xtables-legacy-multi"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s is not in the unpacked tree: %v", p, err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(root, "lib", "*", "libc.so.6")); len(m) == 0 {
		t.Errorf("libc.so.6 (from libc6, a dependency) is not in the unpacked tree %s", root)
	}
	again, err := c.Unpack(context.Background(), "iptables")
	if err != nil || again != root {
		t.Errorf("second Unpack = %q, %v; want the same tree %q", again, err, root)
	}
}
