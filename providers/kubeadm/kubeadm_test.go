package kubeadm

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"sealion.dev/providers"
)

func TestRenderKubeadmConfig(t *testing.T) {
	t.Parallel()
	params := kubeadmParams{ClusterName: "c1", NodeName: "c1-control-plane", NodeIP: "192.0.2.2",
		CRISocket: "unix:///var/tmp/sealion/clusters/c1/containerd/containerd.sock", KubernetesVersion: "v1.33.13"}
	data, err := params.render()
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]map[string]any{}
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("document is not YAML: %v\n%s", err, doc)
		}
		docs[m["kind"].(string)] = m
	}
	get := func(kind string, path ...string) any {
		var v any = docs[kind]
		for _, p := range path {
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%s: no %s", kind, strings.Join(path, "."))
			}
			v = m[p]
		}
		return v
	}
	tests := []struct {
		kind string
		path []string
		want any
	}{
		{"InitConfiguration", []string{"localAPIEndpoint", "advertiseAddress"}, "192.0.2.2"},
		{"InitConfiguration", []string{"nodeRegistration", "name"}, "c1-control-plane"},
		{"InitConfiguration", []string{"nodeRegistration", "criSocket"}, params.CRISocket},
		{"InitConfiguration", []string{"nodeRegistration", "imagePullPolicy"}, "Never"},
		{"InitConfiguration", []string{"nodeRegistration", "taints"}, []any{}},
		{"ClusterConfiguration", []string{"kubernetesVersion"}, "v1.33.13"},
		{"ClusterConfiguration", []string{"controlPlaneEndpoint"}, "192.0.2.2:6443"},
		{"ClusterConfiguration", []string{"networking", "podSubnet"}, podSubnet},
		{"KubeletConfiguration", []string{"cgroupDriver"}, "cgroupfs"},
		{"KubeletConfiguration", []string{"failSwapOn"}, false},
		{"KubeletConfiguration", []string{"imageGCHighThresholdPercent"}, float64(100)},
		{"KubeProxyConfiguration", []string{"conntrack", "maxPerCore"}, float64(0)},
		{"KubeProxyConfiguration", []string{"iptables", "localhostNodePorts"}, false},
	}
	for _, tt := range tests {
		if got := get(tt.kind, tt.path...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s %s = %#v, want %#v", tt.kind, strings.Join(tt.path, "."), got, tt.want)
		}
	}
	if len(docs) != 4 {
		t.Errorf("got kinds %v, want 4 documents", reflect.ValueOf(docs).MapKeys())
	}
}

func TestRenderKubeadmConfigNeedsEveryValue(t *testing.T) {
	t.Parallel()
	if _, err := (kubeadmParams{ClusterName: "c1"}).render(); err == nil {
		t.Fatal("want an error for missing values")
	}
}

func TestParseFlagsEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, content string
		want          []string
		wantErr       bool
	}{
		{
			name:    "kubeadm's file",
			content: `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///w/containerd.sock --hostname-override=c1-control-plane --node-ip=192.0.2.2"` + "\n",
			want:    []string{"--container-runtime-endpoint=unix:///w/containerd.sock", "--hostname-override=c1-control-plane", "--node-ip=192.0.2.2"},
		},
		{name: "unquoted among other lines", content: "# comment\nOTHER=x\nKUBELET_KUBEADM_ARGS=--a=1 --b=2\n", want: []string{"--a=1", "--b=2"}},
		{name: "empty value", content: `KUBELET_KUBEADM_ARGS=""`, want: []string{}},
		{name: "missing", content: "OTHER=1\n", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseFlagsEnv(tt.content)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: parseFlagsEnv = %q, %v; want %q, error %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestImageArchives(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"pause", "etcd", "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(dir, name+".tar"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := imageArchives(dir)
	if !errors.Is(err, ErrImagesMissing) {
		t.Fatalf("want ErrImagesMissing, got %v", err)
	}
	for _, want := range []string{"make images", "kube-controller-manager.tar", "coredns.tar", dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "etcd.tar") {
		t.Errorf("error %q names a present archive", err)
	}
	for _, name := range controlPlaneImages {
		if err := os.WriteFile(filepath.Join(dir, name+".tar"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	paths, err := imageArchives(dir)
	if err != nil || len(paths) != len(controlPlaneImages) {
		t.Errorf("imageArchives = %q, %v; want every archive", paths, err)
	}
}

func TestImageLists(t *testing.T) {
	t.Parallel()
	expected := []string{"registry.k8s.io/kube-apiserver:v1.33.13", "registry.k8s.io/pause:3.10", "registry.k8s.io/coredns/coredns:v1.12.0"}
	present := []string{"registry.k8s.io/pause:3.10", "registry.k8s.io/kube-apiserver:v1.33.13", "sealion.test/other:v1"}
	if got := missingImages(expected, present); !reflect.DeepEqual(got, []string{"registry.k8s.io/coredns/coredns:v1.12.0"}) {
		t.Errorf("missingImages = %q", got)
	}
	if got, err := pauseImage(expected); err != nil || got != "registry.k8s.io/pause:3.10" {
		t.Errorf("pauseImage = %q, %v", got, err)
	}
	if _, err := pauseImage(expected[:1]); err == nil {
		t.Error("pauseImage without a pause image: want an error")
	}
}

func TestCommandLines(t *testing.T) {
	t.Parallel()
	if got, want := strings.Join(kubeadmInitArgs("/w/kubeadm.yaml"), " "),
		"init --config /w/kubeadm.yaml --ignore-preflight-errors=HTTPProxyCIDR,Service-Kubelet,Swap,SystemVerification --v=1"; got != want {
		t.Errorf("init args = %q, want %q", got, want)
	}
	if got, want := strings.Join(kubeadmResetArgs("/w/c.sock"), " "),
		"reset --force --cri-socket unix:///w/c.sock --skip-phases=remove-etcd-member --v=1"; got != want {
		t.Errorf("reset args = %q, want %q", got, want)
	}
}

func TestClusterNames(t *testing.T) {
	t.Parallel()
	p := New(Options{WorkDir: "/w"}).(*provider)
	for name, ok := range map[string]bool{
		"c1": true, "sealion-it": true, "a": true,
		"": false, "-a": false, "A": false, "a_b": false, "../etc": false, strings.Repeat("a", 33): false,
	} {
		l, err := p.layout(name)
		if (err == nil) != ok {
			t.Errorf("layout(%q): error %v, want ok=%v", name, err, ok)
		}
		if ok && l.dir != "/w/"+name {
			t.Errorf("layout(%q).dir = %s", name, l.dir)
		}
	}
}

func TestCreateRefusesWithoutOptIn(t *testing.T) {
	t.Setenv(providers.AllowHostChangesEnv, "")
	t.Setenv("CI", "")
	work := t.TempDir()
	err := New(Options{WorkDir: work}).Create(context.Background(), "c1", providers.CreateOptions{})
	var stepErr *providers.StepError
	if !errors.As(err, &stepErr) || stepErr.Step != "check host-change opt-in" || !errors.Is(err, providers.ErrHostChangesNotAllowed) {
		t.Fatalf("want a refusal at the opt-in step, got %v", err)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Errorf("a refused Create wrote %v", entries)
	}
}

func TestDeleteOfUnknownClusterIsNoop(t *testing.T) {
	t.Parallel()
	if err := New(Options{WorkDir: t.TempDir()}).Delete(context.Background(), "never-created"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	info := New(Options{}).Info()
	c := info.Capabilities
	if info.Name != "kubeadm" || !c.ChangesHost || !c.KubeControllerManagerPod || !c.ClusterSigningKeyAvailable ||
		!c.ControlPlaneVisible || !c.ImagesLoadable || !c.AnonymousAuthEnabled || c.HasExternalLoadBalancer || !c.KubeAPIServerClientSigner {
		t.Errorf("Info = %+v", info)
	}
}
