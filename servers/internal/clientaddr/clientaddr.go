// Package clientaddr names the client of a request by its address, for the limits that count per
// client: the Supervisor's failed client authentications and the fair queues of the Supervisor's
// endpoints and the impersonation proxy.
package clientaddr

import (
	"net"
	"net/http"
	"net/netip"
)

// Source is the source address of r: the connection's IP, and for IPv6 its /64, which one host or
// network is typically given whole. No header speaks for it (X-Forwarded-For, X-Real-IP): anyone
// can set them, and a flood would pass as many clients. The servers serve TLS themselves; behind a
// load balancer that hides client addresses (SNAT), every client shares the balancer's, and
// Services with externalTrafficPolicy: Local keep them.
func Source(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	if addr.Is6() {
		prefix, _ := addr.Prefix(64)
		return prefix.String()
	}
	return addr.String()
}
