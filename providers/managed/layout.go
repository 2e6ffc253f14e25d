package managed

import (
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultStateRoot is where each cluster keeps its state, in a folder named after the cluster.
const DefaultStateRoot = "/var/lib/sealion/managed"

// layout is where one cluster keeps everything it writes: certificates, kubeconfigs, component
// configuration, etcd data, containerd, the kubelet's root, logs and the supervisor's pid file.
// Every daemon's command line names a path inside it, which is how a clean-up finds them.
type layout string

func newLayout(root, cluster string) (layout, error) {
	if errs := validation.IsDNS1123Label(cluster); len(errs) > 0 {
		return "", fmt.Errorf("managed: cluster name %q is not a DNS label: %v", cluster, errs)
	}
	// The node name adds about 20 characters and must stay a label value (63 at most).
	if len(cluster) > 40 {
		return "", fmt.Errorf("managed: cluster name %q is longer than 40 characters", cluster)
	}
	return layout(filepath.Join(root, cluster)), nil
}

func (l layout) path(elem ...string) string {
	return filepath.Join(append([]string{string(l)}, elem...)...)
}

// marker is in the command line of every process of the cluster and nothing else; the trailing
// slash keeps cluster "a" from matching the paths of cluster "ab".
func (l layout) marker() string { return string(l) + "/" }

func (l layout) pkiDir() string          { return l.path("pki") }
func (l layout) logsDir() string         { return l.path("logs") }
func (l layout) configFile() string      { return l.path("cluster.json") }
func (l layout) pidFile() string         { return l.path("supervisor.pid") }
func (l layout) snapshotFile() string    { return l.path("host-snapshot.json") }
func (l layout) adminKubeconfig() string { return l.path("kubeconfig") }
func (l layout) containerdDir() string   { return l.path("containerd") }
func (l layout) cniConfDir() string      { return l.path("cni", "net.d") }
func (l layout) cniIPAMDir() string      { return l.path("cni", "ipam") }
func (l layout) etcdDataDir() string     { return l.path("etcd") }
func (l layout) kubeletDir() string      { return l.path("kubelet") }
func (l layout) kubeletRootDir() string  { return l.path("kubelet", "root") }
func (l layout) podLogsDir() string      { return l.path("pod-logs") }
func (l layout) pkiFile(name string) string {
	return filepath.Join(l.pkiDir(), name)
}
func (l layout) kubeconfigFile(component string) string {
	return filepath.Join(l.pkiDir(), component+".kubeconfig")
}
func (l layout) logFile(component string) string {
	return filepath.Join(l.logsDir(), component+".log")
}
