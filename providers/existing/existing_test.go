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

func TestCreateChecksReachability(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"major":"1","minor":"33","gitVersion":"v1.33.13"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer api.Close()
	if err := New(Options{KubeconfigPath: writeKubeconfig(t, api.URL)}).Create(context.Background(), "dev", providers.CreateOptions{}); err != nil {
		t.Fatalf("Create against a live API server: %v", err)
	}

	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	err := New(Options{KubeconfigPath: writeKubeconfig(t, down.URL)}).Create(context.Background(), "dev", providers.CreateOptions{})
	var stepErr *providers.StepError
	if !errors.As(err, &stepErr) || stepErr.Step != "reach the API server" {
		t.Fatalf("want a reachability failure, got %v", err)
	}

	err = New(Options{KubeconfigPath: filepath.Join(t.TempDir(), "missing")}).Create(context.Background(), "dev", providers.CreateOptions{})
	if !errors.As(err, &stepErr) || stepErr.Step != "load kubeconfig" {
		t.Fatalf("want a kubeconfig failure, got %v", err)
	}
}

func TestLoadImageArchives(t *testing.T) {
	t.Parallel()
	err := New(Options{KubeconfigPath: "k"}).LoadImageArchives(context.Background(), "dev", "/a.tar")
	if !errors.Is(err, providers.ErrImageLoadUnsupported) || !strings.Contains(err.Error(), "registry") {
		t.Errorf("want ErrImageLoadUnsupported with advice, got %v", err)
	}
	if err := New(Options{KubeconfigPath: "k", ImagesPullable: true}).LoadImageArchives(context.Background(), "dev", "/a.tar"); err != nil {
		t.Errorf("pullable images: %v", err)
	}
}

func TestInfoDeleteAndKubeconfig(t *testing.T) {
	t.Parallel()
	p := New(Options{KubeconfigPath: "/k/config", Capabilities: providers.Capabilities{
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
