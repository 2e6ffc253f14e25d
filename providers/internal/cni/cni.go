// Package cni renders the pod network of single-node clusters: a CNI bridge with host-local
// addresses, the firewall plugin (these machines' FORWARD policy may be DROP, which silently
// breaks pod traffic without it), portmap for hostPort and loopback.
package cni

import (
	"encoding/json"
	"fmt"
	"net/netip"
)

// BinDir is where Debian's containernetworking-plugins installs the plugins.
const BinDir = "/usr/lib/cni"

// Bridge is one bridge network on the host.
type Bridge struct {
	// Network is the CNI network name; the conflist file is named after it.
	Network string
	// Device is the Linux bridge created on the host (at most 15 bytes).
	Device string
	// Subnet is the pod address range; its first address is the bridge's (the pods' gateway).
	Subnet netip.Prefix
	// IPAMDataDir is where host-local records leases, instead of the host-wide /var/lib/cni.
	IPAMDataDir string
}

// FileName is the conflist's name in the CNI configuration directory.
func (b Bridge) FileName() string { return "10-" + b.Network + ".conflist" }

type conflist struct {
	CNIVersion string   `json:"cniVersion"`
	Name       string   `json:"name"`
	Plugins    []plugin `json:"plugins"`
}

type plugin struct {
	Type         string          `json:"type"`
	Bridge       string          `json:"bridge,omitempty"`
	IsGateway    bool            `json:"isGateway,omitempty"`
	IPMasq       bool            `json:"ipMasq,omitempty"`
	HairpinMode  bool            `json:"hairpinMode,omitempty"`
	IPAM         *ipam           `json:"ipam,omitempty"`
	Backend      string          `json:"backend,omitempty"`
	Capabilities map[string]bool `json:"capabilities,omitempty"`
}

type ipam struct {
	Type    string  `json:"type"`
	DataDir string  `json:"dataDir"`
	Ranges  [][]rng `json:"ranges"`
	Routes  []route `json:"routes"`
}

type rng struct {
	Subnet  string `json:"subnet"`
	Gateway string `json:"gateway"`
}

type route struct {
	Dst string `json:"dst"`
}

// Render returns the conflist JSON.
func (b Bridge) Render() ([]byte, error) {
	if b.Network == "" || b.IPAMDataDir == "" || !b.Subnet.IsValid() || !b.Subnet.Addr().Is4() {
		return nil, fmt.Errorf("CNI bridge needs a network name, an IPv4 subnet and an IPAM data directory, got %+v", b)
	}
	if n := len(b.Device); n == 0 || n > 15 {
		return nil, fmt.Errorf("CNI bridge device name %q must have 1 to 15 bytes", b.Device)
	}
	subnet := b.Subnet.Masked()
	gateway := subnet.Addr().Next()
	list := conflist{
		CNIVersion: "0.4.0",
		Name:       b.Network,
		Plugins: []plugin{
			{
				Type: "bridge", Bridge: b.Device, IsGateway: true, IPMasq: true, HairpinMode: true,
				IPAM: &ipam{
					Type: "host-local", DataDir: b.IPAMDataDir,
					Ranges: [][]rng{{{Subnet: subnet.String(), Gateway: gateway.String()}}},
					Routes: []route{{Dst: "0.0.0.0/0"}},
				},
			},
			{Type: "firewall", Backend: "iptables"},
			{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}},
			{Type: "loopback"},
		},
	}
	return json.MarshalIndent(list, "", "  ")
}
