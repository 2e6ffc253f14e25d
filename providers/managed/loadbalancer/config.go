package loadbalancer

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Mode is how a Service's address is published in status.loadBalancer.ingress.
type Mode string

const (
	// ModeIP publishes the allocated IP, as GKE and AKS load balancers do.
	ModeIP Mode = "IP"
	// ModeHostname publishes a hostname that resolves to the allocated IP, as EKS (ELB) does.
	// There is no DNS server for it, so the controller keeps it resolvable through the hosts file.
	ModeHostname Mode = "Hostname"
)

const (
	// DefaultRange is the address pool when Config.Range is unset. On Linux the whole of
	// 127.0.0.0/8 is routed to lo, so these addresses need no interface changes.
	DefaultRange = "127.0.10.0/24"
	// DefaultHostnamePattern is the hostname pattern when Config.HostnamePattern is unset.
	// The .test top-level domain is reserved and never resolves through public DNS.
	DefaultHostnamePattern = "{name}.{namespace}.elb.sealion.test"
	// DefaultHostsFile is the hosts file when Config.HostsFile is unset.
	DefaultHostsFile = "/etc/hosts"

	defaultDialTimeout = 5 * time.Second
)

// Config says how addresses are allocated and published. Only Mode is required.
type Config struct {
	// Mode is ModeIP or ModeHostname.
	Mode Mode
	// Range is the pool Service addresses come from; DefaultRange when unset. Its first and last
	// addresses are never handed out, and every address must be local to this machine.
	Range netip.Prefix
	// HostnamePattern (ModeHostname) builds a Service's hostname: "{name}" and "{namespace}" are
	// replaced by the Service's. Both must appear, so that every Service gets its own hostname.
	// DefaultHostnamePattern when empty.
	HostnamePattern string
	// HostsFile (ModeHostname) is the hosts file the controller keeps its block of hostnames in;
	// DefaultHostsFile when empty.
	HostsFile string
	// DialTimeout bounds connecting to one endpoint before the next one is tried; 5s when zero.
	DialTimeout time.Duration
}

// withDefaults fills unset fields and checks the result.
func (c Config) withDefaults() (Config, error) {
	if c.Mode != ModeIP && c.Mode != ModeHostname {
		return c, fmt.Errorf("loadbalancer: mode %q is neither %q nor %q", c.Mode, ModeIP, ModeHostname)
	}
	if !c.Range.IsValid() {
		c.Range = netip.MustParsePrefix(DefaultRange)
	}
	if c.Range != c.Range.Masked() {
		return c, fmt.Errorf("loadbalancer: range %s has host bits set; use %s", c.Range, c.Range.Masked())
	}
	if c.Range.Addr().BitLen()-c.Range.Bits() < 2 {
		return c, fmt.Errorf("loadbalancer: range %s has no usable address (first and last are reserved)", c.Range)
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = defaultDialTimeout
	}
	if c.Mode == ModeIP {
		return c, nil
	}
	if c.HostnamePattern == "" {
		c.HostnamePattern = DefaultHostnamePattern
	}
	if !strings.Contains(c.HostnamePattern, "{name}") || !strings.Contains(c.HostnamePattern, "{namespace}") {
		return c, fmt.Errorf("loadbalancer: hostname pattern %q must contain both {name} and {namespace}", c.HostnamePattern)
	}
	// Names and namespaces are DNS labels, so a pattern that is valid for one is valid for all.
	if errs := validation.IsDNS1123Subdomain(c.hostname("a", "b")); len(errs) > 0 {
		return c, fmt.Errorf("loadbalancer: hostname pattern %q does not give DNS names: %w", c.HostnamePattern, errors.New(strings.Join(errs, "; ")))
	}
	if c.HostsFile == "" {
		c.HostsFile = DefaultHostsFile
	}
	return c, nil
}

// hostname is the hostname of Service namespace/name in ModeHostname.
func (c Config) hostname(namespace, name string) string {
	return strings.NewReplacer("{name}", name, "{namespace}", namespace).Replace(c.HostnamePattern)
}
