// Package hoststate puts a machine back the way it was before a single-node cluster ran on it.
//
// Before the cluster starts, Take records what the cluster may change: which well-known paths
// exist (kubeadm, kubelet, CNI and containerd write outside any directory we choose), kernel
// settings the kubelet and CNI plugins set, network namespaces, iptables chains and cgroups. The
// snapshot is saved next to the cluster so a later process can clean up after a crash. Restore
// then removes what is new, in dependency order: processes, mounts, network namespaces, iptables
// chains, the bridge, cgroups, files, kernel settings. Leftovers lists what still differs.
package hoststate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// watchedPaths are created by kubeadm, the kubelet, CNI plugins, containerd's shims and the
// kube-proxy DaemonSet's hostPath volumes, whatever directories we configure.
var watchedPaths = []string{
	"/etc/kubernetes",
	"/var/lib/kubelet",
	"/var/lib/etcd",
	"/etc/cni/net.d",
	"/etc/cni",
	"/var/lib/cni",
	"/var/log/pods",
	"/var/log/containers",
	"/run/containerd",
	"/run/netns",
	"/run/xtables.lock",
	"/lib/modules",
	"/opt/cni",
	"/opt/containerd",
}

// watchedSysctls are set by the kubelet (kernel tunables it "protects"), CNI's bridge plugin
// (forwarding) and kube-proxy.
var watchedSysctls = []string{
	"net/ipv4/ip_forward",
	"net/ipv6/conf/all/forwarding",
	"net/bridge/bridge-nf-call-iptables",
	"net/bridge/bridge-nf-call-ip6tables",
	"net/ipv4/conf/all/route_localnet",
	"net/netfilter/nf_conntrack_max",
	"net/netfilter/nf_conntrack_tcp_timeout_established",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait",
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
}

// ownedChainPrefixes are the iptables chains of the kubelet, kube-proxy and the CNI plugins.
var ownedChainPrefixes = []string{"KUBE-", "CNI-"}

// netnsDir is where containerd's CRI plugin mounts pod network namespaces.
const netnsDir = "/run/netns"

// Snapshot is the state of the machine before a cluster started.
type Snapshot struct {
	// Existing are the watched paths that existed.
	Existing []string `json:"existing"`
	// Sysctls maps a /proc/sys key to its value.
	Sysctls map[string]string `json:"sysctls"`
	// NetNS are the names in /run/netns.
	NetNS []string `json:"netns"`
	// Chains are the owned iptables chains that existed, as "<program> <table> <chain>".
	Chains []string `json:"chains"`
	// Cgroups are the kubepods cgroup directories that existed.
	Cgroups []string `json:"cgroups"`
}

// Take records the current state. Programs it needs (iptables) are looked up in PATH.
func Take() (*Snapshot, error) {
	s := &Snapshot{Sysctls: map[string]string{}}
	for _, p := range watchedPaths {
		if _, err := os.Lstat(p); err == nil {
			s.Existing = append(s.Existing, p)
		}
	}
	for _, key := range watchedSysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", key)); err == nil {
			s.Sysctls[key] = strings.TrimSpace(string(v))
		}
	}
	var err error
	if s.NetNS, err = listNetNS(); err != nil {
		return nil, err
	}
	if s.Chains, err = ownedChains(); err != nil {
		return nil, err
	}
	s.Cgroups = kubepodsCgroups()
	return s, nil
}

// Save writes the snapshot as JSON.
func (s *Snapshot) Save(path string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("saving host snapshot: %w", err)
	}
	return nil
}

// Load reads a snapshot written by Save.
func Load(path string) (*Snapshot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading host snapshot: %w", err)
	}
	var s Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parsing host snapshot %s: %w", path, err)
	}
	return &s, nil
}

func (s *Snapshot) existed(path string) bool { return slices.Contains(s.Existing, path) }

func listNetNS() ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing network namespaces: %w", err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}
