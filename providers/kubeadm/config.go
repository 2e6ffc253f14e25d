package kubeadm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"text/template"
)

const (
	podSubnet     = "10.244.0.0/16"
	nodePodSubnet = "10.244.0.0/24" // the first node's podCIDR, which the CNI bridge serves
	serviceSubnet = "10.96.0.0/12"
	apiServerPort = 6443
)

// kubeadmParams are the values of one cluster's kubeadm configuration.
type kubeadmParams struct {
	ClusterName       string
	NodeName          string
	NodeIP            string
	CRISocket         string // unix:// URL
	KubernetesVersion string
}

// kubeadmTemplate is the kubeadm v1beta4 configuration, with the kubelet and kube-proxy
// configurations kubeadm hands on. Choices that matter on these machines:
//   - taints: [] keeps the control-plane node schedulable while kubeadm still labels it
//     node-role.kubernetes.io/control-plane;
//   - imagePullPolicy Never: there is no registry, every image is pre-imported;
//   - cgroupfs: no systemd;
//   - eviction and image GC thresholds that never fire on a busy disk, since a GC would delete
//     the pre-imported images;
//   - kube-proxy leaves nf_conntrack_max and route_localnet alone (maxPerCore 0,
//     localhostNodePorts false), so the host's kernel settings stay as they were;
//   - etcd skips fsync: clusters are disposable and the disk is shared by parallel builds.
var kubeadmTemplate = template.Must(template.New("kubeadm.yaml").Funcs(template.FuncMap{"q": yamlString}).Parse(
	`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: {{q .NodeIP}}
  bindPort: {{.APIServerPort}}
nodeRegistration:
  name: {{q .NodeName}}
  criSocket: {{q .CRISocket}}
  imagePullPolicy: Never
  taints: []
  kubeletExtraArgs:
  - name: node-ip
    value: {{q .NodeIP}}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
clusterName: {{q .ClusterName}}
kubernetesVersion: {{q .KubernetesVersion}}
controlPlaneEndpoint: {{q .ControlPlaneEndpoint}}
networking:
  podSubnet: {{q .PodSubnet}}
  serviceSubnet: {{q .ServiceSubnet}}
  dnsDomain: cluster.local
apiServer:
  certSANs: ["127.0.0.1", "localhost"]
  extraArgs:
  - name: anonymous-auth
    value: "true"
etcd:
  local:
    extraArgs:
    - name: unsafe-no-fsync
      value: "true"
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
# This machine runs cgroup v1, which kubelets from 1.35 on refuse unless told otherwise (KEP-5573).
failCgroupV1: false
failSwapOn: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
  nodefs.inodesFree: "1%"
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
conntrack:
  maxPerCore: 0
iptables:
  localhostNodePorts: false
`))

func (p kubeadmParams) render() ([]byte, error) {
	for name, v := range map[string]string{"cluster name": p.ClusterName, "node name": p.NodeName, "node IP": p.NodeIP,
		"CRI socket": p.CRISocket, "Kubernetes version": p.KubernetesVersion} {
		if v == "" {
			return nil, fmt.Errorf("kubeadm configuration needs a %s", name)
		}
	}
	var buf bytes.Buffer
	err := kubeadmTemplate.Execute(&buf, struct {
		kubeadmParams
		APIServerPort                                  int
		ControlPlaneEndpoint, PodSubnet, ServiceSubnet string
	}{p, apiServerPort, fmt.Sprintf("%s:%d", p.NodeIP, apiServerPort), podSubnet, serviceSubnet})
	return buf.Bytes(), err
}

// yamlString quotes s as a YAML double-quoted scalar; JSON strings are valid ones.
func yamlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
