package managed

import (
	"net"
	"net/netip"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"

	"sealion.dev/providers/internal/cni"
	"sealion.dev/providers/internal/containerd"
)

// Cluster network and ports. One managed cluster runs on a machine at a time, like any cluster
// with a kubelet here, so the well-known ports are used as they are.
const (
	apiserverPort       = 6443
	serviceCIDR         = "10.96.0.0/12"
	kubernetesServiceIP = "10.96.0.1"
	dnsServiceIP        = "10.96.0.10"
	clusterCIDR         = "10.244.0.0/16"
	podSubnet           = "10.244.0.0/24"
	clusterDomain       = "cluster.local"
	bridgeDevice        = "sealion-mc0"
	cniNetwork          = "sealion-managed"
)

// clusterConfig is everything the cluster's supervisor needs, written by Create as cluster.json.
type clusterConfig struct {
	Name              string        `json:"name"`
	Profile           string        `json:"profile"`
	KubernetesVersion string        `json:"kubernetesVersion"`
	BinDir            string        `json:"binDir"`
	ImagesDir         string        `json:"imagesDir"`
	HostIP            string        `json:"hostIP"`
	NodeName          string        `json:"nodeName"`
	EtcdClientPort    int           `json:"etcdClientPort"`
	EtcdPeerPort      int           `json:"etcdPeerPort"`
	WaitTimeout       time.Duration `json:"waitTimeout"`
}

// server is the API server's URL, on the host's address so that pods reach it too.
func (c clusterConfig) server() string {
	return "https://" + net.JoinHostPort(c.HostIP, strconv.Itoa(apiserverPort))
}

func (c clusterConfig) etcdClientURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(c.EtcdClientPort)
}

func (c clusterConfig) bin(name string) string { return filepath.Join(c.BinDir, name) }

// atLeastMinor reports whether the cluster runs Kubernetes 1.minor or newer (clusterConfig
// refuses a version that does not parse).
func (c clusterConfig) atLeastMinor(minor uint) bool {
	v, err := version.ParseGeneric(c.KubernetesVersion)
	return err == nil && v.AtLeast(version.MajorMinor(1, minor))
}

func etcdCommand(l layout, c clusterConfig) []string {
	peer := "http://127.0.0.1:" + strconv.Itoa(c.EtcdPeerPort)
	return []string{
		c.bin("etcd"),
		"--name=default",
		"--data-dir=" + l.etcdDataDir(),
		"--listen-client-urls=" + c.etcdClientURL(),
		"--advertise-client-urls=" + c.etcdClientURL(),
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer,
		"--unsafe-no-fsync=true", // a throwaway cluster; fsync only slows it down
	}
}

// apiserverCommand serves on the host address with aggregation configured (the front-proxy
// client certificate and the request-header flags), and routes aggregated requests to endpoint
// IPs as clusters without kube-proxy on the control plane must.
func apiserverCommand(l layout, c clusterConfig, p profile) []string {
	argv := []string{
		c.bin("kube-apiserver"),
		"--bind-address=" + c.HostIP,
		"--advertise-address=" + c.HostIP,
		"--secure-port=" + strconv.Itoa(apiserverPort),
		"--cert-dir=" + l.path("apiserver"), // unused with --tls-cert-file; keeps the default path out of the host
		"--etcd-servers=" + c.etcdClientURL(),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc." + clusterDomain,
		"--service-account-key-file=" + l.pkiFile(saPublicKeyFile),
		"--service-account-signing-key-file=" + l.pkiFile(saPrivateKeyFile),
		"--client-ca-file=" + l.pkiFile(caCertFile),
		"--tls-cert-file=" + l.pkiFile(apiserverCertFile),
		"--tls-private-key-file=" + l.pkiFile(apiserverKeyFile),
		"--kubelet-client-certificate=" + l.pkiFile(kubeletClientCertFile),
		"--kubelet-client-key=" + l.pkiFile(kubeletClientKeyFile),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--authorization-mode=Node,RBAC",
		"--anonymous-auth=" + strconv.FormatBool(p.anonymousAuth),
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		"--enable-aggregator-routing=true",
		"--requestheader-client-ca-file=" + l.pkiFile(frontProxyCACertFile),
		"--requestheader-allowed-names=" + proxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + l.pkiFile(proxyClientCertFile),
		"--proxy-client-key-file=" + l.pkiFile(proxyClientKeyFile),
	}
	// The front proxy forwards the user's UID from 1.33 on, where the RemoteRequestHeaderUID
	// feature is on by default: 1.31's kube-apiserver does not know the flag, and 1.32's refuses it
	// without that alpha feature, both exiting at once.
	if c.atLeastMinor(33) {
		argv = append(argv, "--requestheader-uid-headers=X-Remote-Uid")
	}
	return argv
}

// controllerManagerCommand signs CSRs with the cluster CA, as managed clusters do, but from a
// file on the provider's side that no pod can see. Where the profile has no signer for
// kubernetes.io/kube-apiserver-client, each of the other built-in signers is given the CA by its
// own flags: kube-controller-manager then runs no signer for that one.
func controllerManagerCommand(l layout, c clusterConfig, p profile) []string {
	kubeconfig := l.kubeconfigFile("kube-controller-manager")
	signing := []string{"--cluster-signing-cert-file=" + l.pkiFile(caCertFile), "--cluster-signing-key-file=" + l.pkiFile(caKeyFile)}
	if p.noAPIServerClientSigner {
		signing = nil
		for _, signer := range []string{"kubelet-serving", "kubelet-client", "legacy-unknown"} {
			signing = append(signing,
				"--cluster-signing-"+signer+"-cert-file="+l.pkiFile(caCertFile),
				"--cluster-signing-"+signer+"-key-file="+l.pkiFile(caKeyFile))
		}
	}
	return append([]string{
		c.bin("kube-controller-manager"),
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--leader-elect=false",
		"--cert-dir=" + l.path("kube-controller-manager"),
		"--client-ca-file=" + l.pkiFile(caCertFile),
		"--requestheader-client-ca-file=" + l.pkiFile(frontProxyCACertFile),
		"--root-ca-file=" + l.pkiFile(caCertFile),
		"--service-account-private-key-file=" + l.pkiFile(saPrivateKeyFile),
		"--use-service-account-credentials=true",
		"--service-cluster-ip-range=" + serviceCIDR,
	}, signing...)
}

func schedulerCommand(l layout, c clusterConfig) []string {
	kubeconfig := l.kubeconfigFile("kube-scheduler")
	return []string{
		c.bin("kube-scheduler"),
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--leader-elect=false",
		"--cert-dir=" + l.path("kube-scheduler"),
	}
}

func containerdConfig(l layout, sandboxImage string) containerd.Config {
	return containerd.Config{
		Dir:          l.containerdDir(),
		CNIConfDir:   l.cniConfDir(),
		CNIBinDir:    cni.BinDir,
		SandboxImage: sandboxImage,
	}
}

func bridgeNetwork(l layout) cni.Bridge {
	return cni.Bridge{Network: cniNetwork, Device: bridgeDevice, Subnet: netip.MustParsePrefix(podSubnet), IPAMDataDir: l.cniIPAMDir()}
}

// kubeletConfigFile renders the KubeletConfiguration: cgroupfs (there is no systemd), webhook
// authentication and authorization as every managed cluster has, no static pods, and eviction
// thresholds low enough for small test machines.
func kubeletConfigFile(l layout) ([]byte, error) {
	cfg := map[string]any{
		"apiVersion":   "kubelet.config.k8s.io/v1beta1",
		"kind":         "KubeletConfiguration",
		"cgroupDriver": "cgroupfs",
		// Kubelets from 1.35 on refuse cgroup v1 hosts unless told otherwise (KEP-5573).
		"failCgroupV1":             false,
		"containerRuntimeEndpoint": "unix://" + containerdConfig(l, "").Socket(),
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": l.pkiFile(caCertFile)},
		},
		"authorization": map[string]any{"mode": "Webhook"},
		"clusterDNS":    []string{dnsServiceIP},
		"clusterDomain": clusterDomain,
		"failSwapOn":    false,
		"podLogsDir":    l.podLogsDir(),
		"evictionHard": map[string]string{
			"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%",
		},
		// Images are imported, never pulled: garbage collection would delete them for good.
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"serializeImagePulls":         false,
	}
	return yaml.Marshal(cfg)
}

func kubeletCommand(l layout, c clusterConfig, p profile) []string {
	argv := []string{
		c.bin("kubelet"),
		"--config=" + filepath.Join(l.kubeletDir(), "config.yaml"),
		"--kubeconfig=" + l.kubeconfigFile("kubelet"),
		"--root-dir=" + l.kubeletRootDir(),
		"--cert-dir=" + filepath.Join(l.kubeletDir(), "pki"),
		"--hostname-override=" + c.NodeName,
		"--node-ip=" + c.HostIP,
	}
	if len(p.nodeLabels) > 0 {
		argv = append(argv, "--node-labels="+joinLabels(p.nodeLabels))
	}
	return argv
}

// kubeProxyConfigFile renders the KubeProxyConfiguration of kube-proxy running on the host in
// iptables mode. Zero conntrack settings leave the kernel's values alone.
func kubeProxyConfigFile(l layout, c clusterConfig) ([]byte, error) {
	cfg := map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"mode":               "iptables",
		"clusterCIDR":        clusterCIDR,
		"hostnameOverride":   c.NodeName,
		"clientConnection":   map[string]any{"kubeconfig": l.kubeconfigFile("kube-proxy")},
		"metricsBindAddress": "127.0.0.1:10249",
		"conntrack": map[string]any{
			"maxPerCore":            0,
			"min":                   0,
			"tcpEstablishedTimeout": "0s",
			"tcpCloseWaitTimeout":   "0s",
		},
	}
	return yaml.Marshal(cfg)
}

func kubeProxyCommand(l layout, c clusterConfig) []string {
	return []string{c.bin("kube-proxy"), "--config=" + l.path("kube-proxy.yaml")}
}

// joinLabels renders labels as the kubelet's --node-labels value, sorted for stable output.
func joinLabels(labels map[string]string) string {
	pairs := make([]string, 0, len(labels))
	for k, v := range labels {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}
