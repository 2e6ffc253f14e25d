package existing

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sealion.dev/providers"
)

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	content := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// mustNew is New for options the test knows valid.
func mustNew(t *testing.T, opts Options) providers.Provider {
	t.Helper()
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// apiServer answers /version with gitVersion.
func apiServer(t *testing.T, gitVersion string) string {
	t.Helper()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"major":"1","minor":"0","gitVersion":"` + gitVersion + `"}`))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(api.Close)
	return api.URL
}

func TestCreateChecksReachability(t *testing.T) {
	t.Parallel()
	if err := mustNew(t, Options{KubeconfigPath: writeKubeconfig(t, apiServer(t, "v1.33.13"))}).Create(context.Background(), "dev", providers.CreateOptions{}); err != nil {
		t.Fatalf("Create against a live API server: %v", err)
	}

	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	err := mustNew(t, Options{KubeconfigPath: writeKubeconfig(t, down.URL)}).Create(context.Background(), "dev", providers.CreateOptions{})
	var stepErr *providers.StepError
	if !errors.As(err, &stepErr) || stepErr.Step != "reach the API server" {
		t.Fatalf("want a reachability failure, got %v", err)
	}

	err = mustNew(t, Options{KubeconfigPath: filepath.Join(t.TempDir(), "missing")}).Create(context.Background(), "dev", providers.CreateOptions{})
	if !errors.As(err, &stepErr) || stepErr.Step != "load kubeconfig" {
		t.Fatalf("want a kubeconfig failure, got %v", err)
	}
}

func TestLoadImageArchives(t *testing.T) {
	t.Parallel()
	err := mustNew(t, Options{KubeconfigPath: "k"}).LoadImageArchives(context.Background(), "dev", "/a.tar")
	if !errors.Is(err, providers.ErrImageLoadUnsupported) || !strings.Contains(err.Error(), "registry") {
		t.Errorf("want ErrImageLoadUnsupported with advice, got %v", err)
	}
	if err := mustNew(t, Options{KubeconfigPath: "k", ImagesPullable: true}).LoadImageArchives(context.Background(), "dev", "/a.tar"); err != nil {
		t.Errorf("pullable images: %v", err)
	}
}

func TestInfoDeleteAndKubeconfig(t *testing.T) {
	t.Parallel()
	p := mustNew(t, Options{KubeconfigPath: "/k/config", Capabilities: providers.Capabilities{
		ChangesHost: true, ImagesLoadable: true, HasExternalLoadBalancer: true,
	}})
	info := p.Info()
	if info.Name != "existing" || info.ChangesHost || info.ImagesLoadable || !info.HasExternalLoadBalancer {
		t.Errorf("Info = %+v", info)
	}
	if err := p.Delete(context.Background(), "dev"); err != nil {
		t.Errorf("Delete: %v", err)
	}
	if path, err := p.KubeconfigPath(context.Background(), "dev"); err != nil || path != "/k/config" {
		t.Errorf("KubeconfigPath = %q, %v", path, err)
	}
}

// TestProfiles holds the facts of Pinniped's test setup (test/cluster_capabilities and the
// managed clouds' defaults): the signing key is reachable on kind, kubeadm and TKGS only, and
// anonymous authentication is off on EKS from 1.32, on GKE from 1.35, and on AKS always.
func TestProfiles(t *testing.T) {
	t.Parallel()
	const kcsc, proxy = "KubeClusterSigningCertificate", "ImpersonationProxy"
	for _, tc := range []struct {
		profile, version string
		strategy         string
		anonymous        bool
		loadBalancer     bool
	}{
		{"kind", "v1.37.2", kcsc, true, false},
		{"kubeadm", "v1.31.0", kcsc, true, false},
		{"tkgs", "v1.33.5+vmware.1", kcsc, true, true},
		{"eks", "v1.31.9-eks-5d4a308", proxy, true, true},
		{"eks", "v1.32.3-eks-bcf3d70", proxy, false, true},
		{"gke", "v1.34.1-gke.1829001", proxy, true, true},
		{"gke", "v1.35.0-gke.100", proxy, false, true},
		{"aks", "v1.31.2", proxy, false, true},
	} {
		t.Run(tc.profile+"/"+tc.version, func(t *testing.T) {
			t.Parallel()
			p := mustNew(t, Options{KubeconfigPath: writeKubeconfig(t, apiServer(t, tc.version)), Profile: tc.profile})
			if err := p.Create(context.Background(), "cloud", providers.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			profile, err := LookupProfile(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			if got := profile.Strategy(); got != tc.strategy {
				t.Errorf("Strategy() = %q, want %q", got, tc.strategy)
			}
			key := tc.strategy == kcsc
			want := providers.Capabilities{ControlPlaneVisible: key, KubeControllerManagerPod: key,
				ClusterSigningKeyAvailable: key, HasExternalLoadBalancer: tc.loadBalancer, AnonymousAuthEnabled: tc.anonymous,
				KubeAPIServerClientSigner: tc.profile != "eks"}
			if got := p.Info().Capabilities; got != want {
				t.Errorf("Capabilities = %+v, want %+v", got, want)
			}
		})
	}
}

func TestGenericProfileKeepsTheCallersCapabilities(t *testing.T) {
	t.Parallel()
	given := providers.Capabilities{AnonymousAuthEnabled: true, HasExternalLoadBalancer: true, ImagesLoadable: true}
	for _, name := range []string{"", "generic"} {
		p := mustNew(t, Options{KubeconfigPath: "k", Profile: name, Capabilities: given})
		want := given
		want.ImagesLoadable = false
		if got := p.Info().Capabilities; got != want {
			t.Errorf("profile %q: Capabilities = %+v, want %+v", name, got, want)
		}
		if s := mustProfile(t, name).Strategy(); s != "" {
			t.Errorf("profile %q expects strategy %q, want none", name, s)
		}
	}
}

func mustProfile(t *testing.T, name string) Profile {
	t.Helper()
	p, err := LookupProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBadProfileAndVersion(t *testing.T) {
	t.Parallel()
	if _, err := New(Options{KubeconfigPath: "k", Profile: "openshift"}); err == nil ||
		!strings.Contains(err.Error(), `"openshift"`) || !strings.Contains(err.Error(), "kind, kubeadm, tkgs, eks, gke, aks, generic") {
		t.Errorf("unknown profile: %v", err)
	}
	// Before Create has read the version, anonymous authentication is not assumed.
	if mustNew(t, Options{KubeconfigPath: "k", Profile: "kind"}).Info().AnonymousAuthEnabled {
		t.Error("anonymous authentication assumed before the version is known")
	}
	p := mustNew(t, Options{KubeconfigPath: writeKubeconfig(t, apiServer(t, "banana")), Profile: "eks"})
	var stepErr *providers.StepError
	if err := p.Create(context.Background(), "cloud", providers.CreateOptions{}); !errors.As(err, &stepErr) ||
		stepErr.Step != "read the Kubernetes version" || !strings.Contains(err.Error(), "banana") {
		t.Errorf("unparseable version: %v", err)
	}
}
