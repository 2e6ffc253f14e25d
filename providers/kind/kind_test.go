package kind

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"sealion.dev/providers"
)

func TestChooseNodeImage(t *testing.T) {
	t.Parallel()
	const version = "v1.33.13"
	upstream, local := "kindest/node:"+version, "localhost/sealion/kind-node:"+version
	pullErr := errors.New("no registry")
	tests := []struct {
		name     string
		explicit string
		present  []string
		pullErr  error
		want     string
		pulled   bool
		wantErr  []string
	}{
		{name: "explicit wins without looking", explicit: "example/node:x", present: []string{upstream, local}, want: "example/node:x"},
		{name: "upstream present", present: []string{upstream, local}, want: upstream},
		{name: "local build present", present: []string{local}, want: local},
		{name: "nothing local: pull upstream", want: upstream, pulled: true},
		{name: "nothing anywhere", pullErr: pullErr, pulled: true,
			wantErr: []string{upstream, local, "make kind-node-image KUBE_VERSION=" + version, "no registry"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pulled := false
			present := func(_ context.Context, ref string) (bool, error) {
				if tt.explicit != "" {
					t.Errorf("looked for %s although an image was given", ref)
				}
				return slices.Contains(tt.present, ref), nil
			}
			pull := func(_ context.Context, ref string) error {
				if ref != upstream {
					t.Errorf("pulled %s, want only %s", ref, upstream)
				}
				pulled = true
				return tt.pullErr
			}
			got, err := chooseNodeImage(context.Background(), tt.explicit, version, present, pull)
			if pulled != tt.pulled {
				t.Errorf("pulled = %v, want %v", pulled, tt.pulled)
			}
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("got %q, want an error", got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestClusterConfigIsOneWorkloadNodeWithOurNetworks(t *testing.T) {
	t.Parallel()
	data, err := yaml.Marshal(clusterConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: Cluster", "apiVersion: kind.x-k8s.io/v1alpha4", "role: control-plane",
		"podSubnet: " + PodSubnet, "serviceSubnet: " + ServiceSubnet} {
		if !strings.Contains(string(data), want) {
			t.Errorf("config lacks %q:\n%s", want, data)
		}
	}
	if n := strings.Count(string(data), "role:"); n != 1 {
		t.Errorf("config has %d nodes, want 1:\n%s", n, data)
	}
}

func TestCapabilitiesMatchAKubeadmControlPlane(t *testing.T) {
	t.Parallel()
	info := New(Options{}).Info()
	want := providers.Capabilities{
		ChangesHost: true, ImagesLoadable: true, ControlPlaneVisible: true, KubeControllerManagerPod: true,
		ClusterSigningKeyAvailable: true, AnonymousAuthEnabled: true, KubeAPIServerClientSigner: true,
	}
	if info.Name != Name || info.Capabilities != want {
		t.Errorf("Info() = %+v, want %s with %+v", info, Name, want)
	}
}

func TestCreateRefusesWithoutOptIn(t *testing.T) {
	t.Setenv(providers.AllowHostChangesEnv, "")
	t.Setenv("CI", "")
	err := New(Options{WorkDir: t.TempDir()}).Create(context.Background(), "x", providers.CreateOptions{})
	var stepErr *providers.StepError
	if !errors.As(err, &stepErr) || !errors.Is(err, providers.ErrHostChangesNotAllowed) {
		t.Errorf("Create without opt-in: %v, want a StepError wrapping ErrHostChangesNotAllowed", err)
	}
}

func TestBadNamesAreRefused(t *testing.T) {
	t.Parallel()
	p := New(Options{WorkDir: t.TempDir()})
	for _, name := range []string{"", "Upper", "-lead", "has space", "../escape", strings.Repeat("a", 33)} {
		if _, err := p.KubeconfigPath(context.Background(), name); err == nil || !strings.Contains(err.Error(), "invalid cluster name") {
			t.Errorf("KubeconfigPath(%q): %v, want an invalid name error", name, err)
		}
		if err := p.Delete(context.Background(), name); err == nil {
			t.Errorf("Delete(%q) accepted the name", name)
		}
	}
}

func TestKubeconfigPathOfMissingCluster(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := New(Options{WorkDir: dir})
	if _, err := p.KubeconfigPath(context.Background(), "absent"); err == nil || !strings.Contains(err.Error(), "not created?") {
		t.Errorf("KubeconfigPath of a missing cluster: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "present"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "present", "kubeconfig"), []byte("apiVersion: v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := p.KubeconfigPath(context.Background(), "present"); err != nil || got != filepath.Join(dir, "present", "kubeconfig") {
		t.Errorf("KubeconfigPath = %q, %v", got, err)
	}
}

func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cluster.json")
	s := clusterState{Name: "a", NodeImage: "img", Route: []string{ServiceSubnet, "via", "172.18.0.2"}, Networks: []string{"kind"}, LockHolder: 7}
	if err := s.save(path); err != nil {
		t.Fatal(err)
	}
	got, err := loadState(path)
	if err != nil || !slices.Equal(got.Route, s.Route) || got.LockHolder != 7 || got.NodeImage != "img" || !slices.Equal(got.Networks, s.Networks) {
		t.Errorf("loadState = %+v, %v; want %+v", got, err, s)
	}
}
