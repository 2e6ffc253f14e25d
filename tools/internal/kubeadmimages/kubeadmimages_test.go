package kubeadmimages

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    []Image
		wantErr string
	}{
		{
			name: "kubeadm 1.33",
			out: `registry.k8s.io/kube-apiserver:v1.33.13
registry.k8s.io/kube-controller-manager:v1.33.13
registry.k8s.io/kube-scheduler:v1.33.13
registry.k8s.io/kube-proxy:v1.33.13
registry.k8s.io/coredns/coredns:v1.12.0
registry.k8s.io/pause:3.10
registry.k8s.io/etcd:3.5.24-0
`,
			want: []Image{
				{Ref: "registry.k8s.io/kube-apiserver:v1.33.13", Component: "kube-apiserver", Tag: "v1.33.13"},
				{Ref: "registry.k8s.io/kube-controller-manager:v1.33.13", Component: "kube-controller-manager", Tag: "v1.33.13"},
				{Ref: "registry.k8s.io/kube-scheduler:v1.33.13", Component: "kube-scheduler", Tag: "v1.33.13"},
				{Ref: "registry.k8s.io/kube-proxy:v1.33.13", Component: "kube-proxy", Tag: "v1.33.13"},
				{Ref: "registry.k8s.io/coredns/coredns:v1.12.0", Component: "coredns", Tag: "v1.12.0"},
				{Ref: "registry.k8s.io/pause:3.10", Component: "pause", Tag: "3.10"},
				{Ref: "registry.k8s.io/etcd:3.5.24-0", Component: "etcd", Tag: "3.5.24-0"},
			},
		},
		{
			name: "custom repository, blank lines and spaces",
			out:  "\n  my.registry:5000/k8s/kube-apiserver:v1.33.0  \n\nmy.registry:5000/k8s/pause:3.10\n",
			want: []Image{
				{Ref: "my.registry:5000/k8s/kube-apiserver:v1.33.0", Component: "kube-apiserver", Tag: "v1.33.0"},
				{Ref: "my.registry:5000/k8s/pause:3.10", Component: "pause", Tag: "3.10"},
			},
		},
		{name: "untagged reference", out: "registry.k8s.io/pause\n", wantErr: "not a tagged image reference"},
		{name: "not a reference", out: "I0101 warning: could not fetch a Kubernetes version\n", wantErr: "not a tagged image reference"},
		{name: "component twice", out: "a.io/pause:3.9\nb.io/pause:3.10\n", wantErr: "two images for pause"},
		{name: "empty", out: "\n", wantErr: "no images"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.out))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestListFailsWithoutKubeadm(t *testing.T) {
	_, err := List("/nonexistent/kubeadm", "v1.33.13")
	if err == nil || !strings.Contains(err.Error(), "config images list") {
		t.Errorf("List error = %v, want one naming the command", err)
	}
}
