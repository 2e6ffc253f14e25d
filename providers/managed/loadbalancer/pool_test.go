package loadbalancer

import (
	"net/netip"
	"strings"
	"testing"
)

func TestPool(t *testing.T) {
	addr := netip.MustParseAddr
	tests := []struct {
		name    string
		prefix  string
		taken   map[string]string // address -> owner, assigned first
		owner   string
		assign  string // empty: take the next free address
		want    string
		wantErr string
	}{
		{name: "first address is skipped", prefix: "127.0.10.0/24", owner: "ns/a", want: "127.0.10.1"},
		{name: "lowest free address", prefix: "127.0.10.0/24", taken: map[string]string{"127.0.10.1": "ns/a", "127.0.10.3": "ns/c"}, owner: "ns/b", want: "127.0.10.2"},
		{name: "exhausted range", prefix: "127.0.10.0/30", taken: map[string]string{"127.0.10.1": "ns/a", "127.0.10.2": "ns/b"}, owner: "ns/c", wantErr: "every address"},
		{name: "requested address", prefix: "127.0.10.0/24", owner: "ns/a", assign: "127.0.10.77", want: "127.0.10.77"},
		{name: "IPv4-mapped request", prefix: "127.0.10.0/24", owner: "ns/a", assign: "::ffff:127.0.10.5", want: "127.0.10.5"},
		{name: "request held by the same owner", prefix: "127.0.10.0/24", taken: map[string]string{"127.0.10.7": "ns/a"}, owner: "ns/a", assign: "127.0.10.7", want: "127.0.10.7"},
		{name: "request held by another owner", prefix: "127.0.10.0/24", taken: map[string]string{"127.0.10.7": "ns/a"}, owner: "ns/b", assign: "127.0.10.7", wantErr: "already used by Service ns/a"},
		{name: "request outside the range", prefix: "127.0.10.0/24", owner: "ns/a", assign: "127.0.11.1", wantErr: "not in the load balancer range"},
		{name: "request of the first address", prefix: "127.0.10.0/24", owner: "ns/a", assign: "127.0.10.0", wantErr: "not in the load balancer range"},
		{name: "request of the last address", prefix: "127.0.10.0/24", owner: "ns/a", assign: "127.0.10.255", wantErr: "not in the load balancer range"},
		{name: "IPv6 range", prefix: "fd00:10::/120", owner: "ns/a", want: "fd00:10::1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPool(netip.MustParsePrefix(tt.prefix))
			for a, owner := range tt.taken {
				if err := p.assign(owner, addr(a)); err != nil {
					t.Fatal(err)
				}
			}
			var got netip.Addr
			var err error
			if tt.assign == "" {
				got, err = p.next(tt.owner)
			} else {
				err = p.assign(tt.owner, addr(tt.assign))
				got = addr(tt.assign).Unmap()
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v; want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != addr(tt.want) {
				t.Fatalf("got %v, %v; want %s", got, err, tt.want)
			}
			if p.owners[got] != tt.owner {
				t.Fatalf("owner of %s = %q; want %q", got, p.owners[got], tt.owner)
			}
		})
	}
}

func TestPoolRelease(t *testing.T) {
	p := newPool(netip.MustParsePrefix("127.0.10.0/30"))
	a, _ := p.next("ns/a")
	if _, err := p.next("ns/b"); err != nil {
		t.Fatal(err)
	}
	p.release(a)
	if got, err := p.next("ns/c"); err != nil || got != a {
		t.Fatalf("next() after release = %v, %v; want the released %s", got, err, a)
	}
}
