package steps

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const pushedServer = "127.0.0.1:5000/team/pinniped-server@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParsePushed(t *testing.T) {
	t.Parallel()
	images, err := parsePushed(ServerImage+" "+pushedServer+"\n", 1)
	if err != nil || images[ServerImage] != pushedServer {
		t.Fatalf("parsePushed = %v, %v", images, err)
	}
	for _, out := range []string{"", ServerImage + " 127.0.0.1:5000/team/pinniped-server:dev\n", ServerImage + "\n"} {
		if _, err := parsePushed(out, 1); err == nil {
			t.Errorf("parsePushed(%q) accepted", out)
		}
	}
}

func TestImage(t *testing.T) {
	t.Parallel()
	if got := Image(context.Background(), ServerImage); got != ServerImage {
		t.Errorf("without a push: %q", got)
	}
	ctx := context.WithValue(context.Background(), pushedKey{}, pushed{ServerImage: pushedServer})
	if got := Image(ctx, ServerImage); got != pushedServer {
		t.Errorf("after a push: %q, want %q", got, pushedServer)
	}
}

// TestKustomizationPointsAtPushedImages: the installs of a pushed run name the pushed image by
// digest, each server's, the Concierge with its components as well; kubectl kustomize, where
// this machine has our kubectl, renders them so.
func TestKustomizationPointsAtPushedImages(t *testing.T) {
	t.Parallel()
	images := pushed{ServerImage: pushedServer}
	wantLine := `- {name: "localhost/sealion/pinniped-server", newName: "127.0.0.1:5000/team/pinniped-server", digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}`
	kubectl := ""
	if dir, err := KubeBinDir(); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "kubectl")); err == nil {
			kubectl = filepath.Join(dir, "kubectl")
		}
	}
	for _, tc := range []struct {
		base       string
		components []string
	}{
		{"servers/concierge/deploy", []string{"signer-secret"}},
		{"servers/supervisor/deploy", nil},
		{"servers/local-user-authenticator/deploy", nil},
	} {
		dir := t.TempDir()
		k, err := kustomization(dir, RepoPath(tc.base), tc.components, images)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(k, "images:\n"+wantLine+"\n") {
			t.Errorf("%s: kustomization without the pushed image:\n%s", tc.base, k)
		}
		if kubectl == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v\n%s", tc.base, err, out)
		}
		if !strings.Contains(string(out), "image: "+pushedServer+"\n") || strings.Contains(string(out), ServerImage) {
			t.Errorf("%s renders without the pushed image, or still with the local one:\n%s", tc.base, out)
		}
	}

	if _, err := kustomization(t.TempDir(), RepoPath("servers/supervisor/deploy"), nil, pushed{ServerImage: "127.0.0.1:5000/x:dev"}); err == nil {
		t.Error("an image pushed without a digest was accepted")
	}
	// Without a push or components the kustomization is just the base.
	if k, _ := kustomization("/a", "/a/b", nil, nil); k != "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [b]\n" {
		t.Errorf("plain kustomization %q", k)
	}
}
