package clientaddr

import (
	"net/http"
	"testing"
)

func TestSource(t *testing.T) {
	for remote, want := range map[string]string{
		"192.0.2.1:4321":              "192.0.2.1",
		"[::ffff:192.0.2.1]:4321":     "192.0.2.1",
		"[2001:db8:1:2:3:4:5:6]:4321": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:1":    "2001:db8:1:2::/64",
		"[fe80::1%eth0]:1":            "fe80::/64",
		"@":                           "@", // a Unix socket's peer
		"not an address":              "not an address",
		"192.0.2.1":                   "192.0.2.1",
	} {
		r := &http.Request{RemoteAddr: remote, Header: http.Header{}}
		r.Header.Set("X-Forwarded-For", "198.51.100.1")
		r.Header.Set("X-Real-Ip", "198.51.100.2")
		if got := Source(r); got != want {
			t.Errorf("Source(%q) = %q, want %q", remote, got, want)
		}
	}
}
