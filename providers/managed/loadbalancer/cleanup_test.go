package loadbalancer

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

func TestRemoveHostnames(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hosts")
	const others = "127.0.0.1\tlocalhost\n"
	if err := os.WriteFile(path, []byte(others), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := hostsFile(path).Write(map[string]netip.Addr{"a.b.elb.sealion.test": netip.MustParseAddr("127.0.10.1")}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // a second call finds nothing to remove
		if err := RemoveHostnames(path); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != others {
			t.Errorf("after RemoveHostnames the file is %q, want %q", got, others)
		}
	}
}
