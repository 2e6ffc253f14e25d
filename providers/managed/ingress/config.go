package ingress

import (
	"fmt"
	"net/netip"
	"time"
)

const (
	// ClassName is the IngressClass the controller ensures and serves.
	ClassName = "sealion-passthrough"
	// ControllerName is the IngressClass spec.controller naming this controller.
	ControllerName = "sealion.dev/ingress-passthrough"
	// PassthroughAnnotation marks an Ingress whose TLS connections are passed through to the
	// backend, ingress-nginx's annotation, so that YAML written for ingress-nginx works unchanged.
	PassthroughAnnotation = "nginx.ingress.kubernetes.io/ssl-passthrough"

	// DefaultAddress is the listener when Config.Address is unset: a loopback address, which on
	// Linux needs no interface change, outside the load balancer's DefaultRange.
	DefaultAddress = "127.0.11.1:443"
	// DefaultHostsFile is the hosts file when Config.HostsFile is unset.
	DefaultHostsFile = "/etc/hosts"

	defaultDialTimeout = 5 * time.Second
)

// Config says where the controller listens. Every field has a default.
type Config struct {
	// Address is the "IP:port" every routed Ingress is reached on; DefaultAddress when empty. The
	// IP must be one of this machine's; it is published in the Ingresses' status and the hosts file.
	Address string
	// HostsFile is the hosts file the controller keeps its block of hostnames in; DefaultHostsFile
	// when empty.
	HostsFile string
	// DialTimeout bounds connecting to one endpoint before the next one is tried; 5s when zero.
	DialTimeout time.Duration
}

// withDefaults fills unset fields and checks the result.
func (c Config) withDefaults() (Config, error) {
	if c.Address == "" {
		c.Address = DefaultAddress
	}
	addr, err := netip.ParseAddrPort(c.Address)
	if err != nil {
		return c, fmt.Errorf("ingress: address %q is not an IP:port: %w", c.Address, err)
	}
	if addr.Addr().IsUnspecified() {
		return c, fmt.Errorf("ingress: address %q must name one IP, which Ingress statuses and the hosts file publish", c.Address)
	}
	if c.HostsFile == "" {
		c.HostsFile = DefaultHostsFile
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = defaultDialTimeout
	}
	return c, nil
}

// ip is the listener's IP, the address published for every routed Ingress.
func (c Config) ip() netip.Addr {
	return netip.MustParseAddrPort(c.Address).Addr().Unmap()
}
