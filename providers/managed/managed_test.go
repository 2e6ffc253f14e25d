package managed

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"sealion.dev/providers"
	"sealion.dev/providers/managed/loadbalancer"
)

func TestInfo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		profile      string
		anonymous    bool
		lbMode       loadbalancer.Mode
		controlPlane bool // the node is a visible control plane
		ingress      bool
	}{
		{profile: "gke", anonymous: true, lbMode: loadbalancer.ModeIP},
		{profile: "eks", anonymous: true, lbMode: loadbalancer.ModeHostname},
		{profile: "aks", anonymous: false, lbMode: loadbalancer.ModeIP},
		{profile: "talos-like", anonymous: false, controlPlane: true, ingress: true},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			t.Parallel()
			p, err := New(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			want := providers.Info{Name: tc.profile, Capabilities: providers.Capabilities{
				ChangesHost:             true,
				ImagesLoadable:          true,
				ControlPlaneVisible:     tc.controlPlane,
				HasExternalLoadBalancer: tc.lbMode != "",
				IngressTLSPassthrough:   tc.ingress,
				AnonymousAuthEnabled:    tc.anonymous,
				// EKS's CA signs no kube-apiserver-client certificates.
				KubeAPIServerClientSigner: tc.profile != "eks",
			}}
			if got := p.Info(); got != want {
				t.Errorf("Info() = %+v, want %+v", got, want)
			}
			if got := p.(*provider).profile.lbMode; got != tc.lbMode {
				t.Errorf("load balancer mode = %s, want %s", got, tc.lbMode)
			}
		})
	}
}

func TestNewUnknownProfile(t *testing.T) {
	t.Parallel()
	_, err := New("openshift")
	if err == nil || !strings.Contains(err.Error(), "gke, eks, aks, talos-like") {
		t.Errorf("New(openshift) error = %v, want one listing the profiles", err)
	}
}

func TestLayoutNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"demo", true},
		{"sealion-e2e-gke", true},
		{"Demo", false},
		{"a/b", false},
		{"", false},
		{strings.Repeat("a", 41), false},
	} {
		l, err := newLayout("/state", tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("newLayout(%q) error = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if tc.ok && l.marker() != "/state/"+tc.name+"/" {
			t.Errorf("marker of %q = %q", tc.name, l.marker())
		}
	}
}

// TestCreateRefusesHostChanges checks the opt-in comes before anything touches the host.
func TestCreateRefusesHostChanges(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := &provider{profile: profiles[0], stateRoot: root, getenv: func(string) string { return "" }}
	err := p.Create(context.Background(), "demo", providers.CreateOptions{})
	var stepErr *providers.StepError
	if !errors.As(err, &stepErr) || !errors.Is(err, providers.ErrHostChangesNotAllowed) {
		t.Fatalf("Create error = %v, want a StepError wrapping ErrHostChangesNotAllowed", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) > 0 {
		t.Errorf("Create wrote %v before refusing", entries)
	}
}

func TestCreateRefusesExistingCluster(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "demo"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := &provider{profile: profiles[0], stateRoot: root, getenv: func(string) string { return "" }}
	err := p.Create(context.Background(), "demo", providers.CreateOptions{AllowHostChanges: true})
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("Create error = %v, want already exists", err)
	}
}

func TestDeleteMissingCluster(t *testing.T) {
	t.Parallel()
	p := &provider{profile: profiles[0], stateRoot: t.TempDir(), getenv: func(string) string { return "" }}
	if err := p.Delete(context.Background(), "gone"); err != nil {
		t.Errorf("Delete of a missing cluster = %v, want nil", err)
	}
}

func testConfig() clusterConfig {
	return clusterConfig{
		Name: "demo", KubernetesVersion: "v1.37.2", BinDir: "/bin/k8s", HostIP: "192.0.2.2", NodeName: "gke-demo-default-pool-0",
		EtcdClientPort: 40001, EtcdPeerPort: 40002,
	}
}

func TestAPIServerFlags(t *testing.T) {
	t.Parallel()
	l := layout("/state/demo")
	common := []string{
		"--bind-address=192.0.2.2",
		"--advertise-address=192.0.2.2",
		"--secure-port=6443",
		"--etcd-servers=http://127.0.0.1:40001",
		"--enable-aggregator-routing=true",
		"--requestheader-client-ca-file=/state/demo/pki/front-proxy-ca.crt",
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=/state/demo/pki/front-proxy-client.crt",
		"--proxy-client-key-file=/state/demo/pki/front-proxy-client.key",
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
	}
	for _, tc := range []struct {
		profile   string
		anonymous string
	}{
		{"gke", "--anonymous-auth=true"},
		{"eks", "--anonymous-auth=true"},
		{"aks", "--anonymous-auth=false"},
		{"talos-like", "--anonymous-auth=false"},
	} {
		p, err := lookupProfile(tc.profile)
		if err != nil {
			t.Fatal(err)
		}
		argv := apiserverCommand(l, testConfig(), p)
		if argv[0] != "/bin/k8s/kube-apiserver" {
			t.Errorf("%s: program = %s", tc.profile, argv[0])
		}
		for _, want := range append(common, tc.anonymous) {
			if !slices.Contains(argv, want) {
				t.Errorf("%s: kube-apiserver lacks %s in %v", tc.profile, want, argv)
			}
		}
	}
}

// The front proxy's UID header flag works without a feature gate from Kubernetes 1.33 on; 1.31's
// and 1.32's kube-apiservers exit on it, so it is passed from 1.33 only.
func TestAPIServerUIDHeaderFromKube133(t *testing.T) {
	t.Parallel()
	const flag = "--requestheader-uid-headers=X-Remote-Uid"
	for v, want := range map[string]bool{"v1.31.0": false, "v1.32.2": false, "v1.33.13": true, "v1.37.2": true} {
		c := testConfig()
		c.KubernetesVersion = v
		if got := slices.Contains(apiserverCommand(layout("/state/demo"), c, profiles[0]), flag); got != want {
			t.Errorf("%s: kube-apiserver has %s: %v, want %v", v, flag, got, want)
		}
	}
}

// TestEveryPathInState checks that each daemon's command line names the state folder, which is
// how Delete finds what a killed supervisor left running.
func TestEveryPathInState(t *testing.T) {
	t.Parallel()
	l := layout("/state/demo")
	c := testConfig()
	for name, argv := range map[string][]string{
		"etcd":                    etcdCommand(l, c),
		"kube-apiserver":          apiserverCommand(l, c, profiles[0]),
		"kube-controller-manager": controllerManagerCommand(l, c, profiles[0]),
		"kube-scheduler":          schedulerCommand(l, c),
		"kubelet":                 kubeletCommand(l, c, profiles[0]),
		"kube-proxy":              kubeProxyCommand(l, c),
	} {
		if !strings.Contains(strings.Join(argv, " "), l.marker()) {
			t.Errorf("%s's command line does not mention %s: %v", name, l.marker(), argv)
		}
	}
}

func TestKubeletCommand(t *testing.T) {
	t.Parallel()
	for _, p := range profiles {
		argv := kubeletCommand(layout("/state/demo"), testConfig(), p)
		want := []string{
			"--hostname-override=gke-demo-default-pool-0",
			"--node-ip=192.0.2.2",
			"--kubeconfig=/state/demo/pki/kubelet.kubeconfig",
			"--root-dir=/state/demo/kubelet/root",
		}
		if len(p.nodeLabels) > 0 {
			want = append(want, "--node-labels="+joinLabels(p.nodeLabels))
		} else if slices.ContainsFunc(argv, func(a string) bool { return strings.HasPrefix(a, "--node-labels") }) {
			t.Errorf("%s: kubelet has --node-labels without labels: %v", p.name, argv)
		}
		for _, want := range want {
			if !slices.Contains(argv, want) {
				t.Errorf("%s: kubelet lacks %s in %v", p.name, want, argv)
			}
		}
		for _, arg := range argv {
			if strings.Contains(arg, "node-role.kubernetes.io") {
				t.Errorf("%s: kubelet carries a role label: %s", p.name, arg)
			}
		}
	}
}

func TestKubeletConfigFile(t *testing.T) {
	t.Parallel()
	data, err := kubeletConfigFile(layout("/state/demo"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Kind                     string   `json:"kind"`
		CgroupDriver             string   `json:"cgroupDriver"`
		ContainerRuntimeEndpoint string   `json:"containerRuntimeEndpoint"`
		ClusterDNS               []string `json:"clusterDNS"`
		StaticPodPath            string   `json:"staticPodPath"`
		Authentication           struct {
			Anonymous struct{ Enabled bool } `json:"anonymous"`
			X509      struct {
				ClientCAFile string `json:"clientCAFile"`
			} `json:"x509"`
		} `json:"authentication"`
		Authorization struct{ Mode string } `json:"authorization"`
	}
	if err := yaml.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "KubeletConfiguration" || got.CgroupDriver != "cgroupfs" ||
		got.ContainerRuntimeEndpoint != "unix:///state/demo/containerd/containerd.sock" ||
		!slices.Equal(got.ClusterDNS, []string{dnsServiceIP}) || got.StaticPodPath != "" ||
		got.Authentication.Anonymous.Enabled || got.Authentication.X509.ClientCAFile != "/state/demo/pki/ca.crt" ||
		got.Authorization.Mode != "Webhook" {
		t.Errorf("unexpected kubelet configuration:\n%s", data)
	}
}

func TestKubeProxyConfigFile(t *testing.T) {
	t.Parallel()
	data, err := kubeProxyConfigFile(layout("/state/demo"), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{
		"kind": "KubeProxyConfiguration", "mode": "iptables", "clusterCIDR": clusterCIDR,
		"hostnameOverride": "gke-demo-default-pool-0",
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	if cc, _ := got["clientConnection"].(map[string]any); cc["kubeconfig"] != "/state/demo/pki/kube-proxy.kubeconfig" {
		t.Errorf("clientConnection = %v", got["clientConnection"])
	}
}

func TestClientIdentities(t *testing.T) {
	t.Parallel()
	ids := clientIdentities("gke-demo-default-pool-0")
	i := slices.IndexFunc(ids, func(id clientIdentity) bool { return id.component == "kubelet" })
	if i < 0 || ids[i].user != "system:node:gke-demo-default-pool-0" || !slices.Equal(ids[i].groups, []string{"system:nodes"}) {
		t.Errorf("kubelet identity = %+v, want system:node:<name> in system:nodes", ids)
	}
}

func TestWritePKI(t *testing.T) {
	t.Parallel()
	l := layout(t.TempDir())
	if err := writePKI(l, []byte{192, 0, 2, 2}, "node-0", "https://192.0.2.2:6443"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{caCertFile, caKeyFile, frontProxyCACertFile, apiserverCertFile, proxyClientCertFile, saPublicKeyFile, saPrivateKeyFile} {
		if _, err := os.Stat(l.pkiFile(f)); err != nil {
			t.Error(err)
		}
	}
	for _, id := range clientIdentities("node-0") {
		data, err := os.ReadFile(l.kubeconfigFile(id.component))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte("server: https://192.0.2.2:6443")) {
			t.Errorf("kubeconfig of %s does not point at the host address:\n%s", id.component, data)
		}
	}
}

func TestArchiveTag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, files map[string]string) string {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for n, content := range files {
			if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(content))}); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write([]byte(content)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		want    string
		wantErr string
	}{
		{"ok", map[string]string{"manifest.json": `[{"RepoTags":["registry.k8s.io/pause:3.10"]}]`}, "registry.k8s.io/pause:3.10", ""},
		{"untagged", map[string]string{"manifest.json": `[{"RepoTags":[]}]`}, "", "names no image"},
		{"oci", map[string]string{"index.json": `{}`}, "", "no manifest.json"},
	} {
		got, err := archiveTag(write(tc.name+".tar", tc.files))
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: archiveTag = %q, %v; want %q, error containing %q", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestCopyTreeMissingSource(t *testing.T) {
	t.Parallel()
	if err := copyTree(filepath.Join(t.TempDir(), "missing"), t.TempDir()); err != nil {
		t.Errorf("copyTree of a missing folder = %v, want nil", err)
	}
}

// A Kubernetes version that does not parse is refused before anything starts.
func TestClusterConfigRefusesBadVersion(t *testing.T) {
	t.Parallel()
	p := &provider{profile: profiles[0], getenv: func(string) string { return "" }}
	_, err := p.clusterConfig("demo", providers.CreateOptions{KubernetesVersion: "latest"})
	if err == nil || !strings.Contains(err.Error(), `Kubernetes version "latest"`) {
		t.Errorf("clusterConfig = %v, want the version refused", err)
	}
}

// TestControllerManagerSigners checks that eks-like runs no kubernetes.io/kube-apiserver-client
// signer, as EKS's CA signs no such certificates, while the other profiles sign every built-in
// signer with the cluster CA.
func TestControllerManagerSigners(t *testing.T) {
	t.Parallel()
	for _, p := range profiles {
		argv := strings.Join(controllerManagerCommand(layout("/state/demo"), testConfig(), p), " ")
		all := strings.Contains(argv, "--cluster-signing-cert-file=")
		apiServerClient := all || strings.Contains(argv, "--cluster-signing-kube-apiserver-client-cert-file=")
		if want := p.name != "eks"; apiServerClient != want {
			t.Errorf("%s: signs kube-apiserver-client: %v, want %v: %s", p.name, apiServerClient, want, argv)
		}
		if !all && !strings.Contains(argv, "--cluster-signing-kubelet-client-cert-file=") {
			t.Errorf("%s: kubelets' client certificates are not signed: %s", p.name, argv)
		}
	}
}
