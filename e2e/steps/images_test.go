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
// this machine has our kubectl, renders them so from install YAMLs made as the release makes
// them (the development manifests with the image pinned by digest).
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
	const released = "localhost/sealion/pinniped-server@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	for _, tc := range []struct {
		base       string
		components []string
	}{
		{"servers/concierge/deploy", []string{"signer-secret"}},
		{"servers/supervisor/deploy", nil},
		{"servers/local-user-authenticator/deploy", nil},
	} {
		dir := t.TempDir()
		k, err := kustomization(dir, "install.yaml", prefixed(RepoPath(tc.base+"/components"), tc.components), images)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(k, "images:\n"+wantLine+"\n") || !strings.Contains(k, "resources: [install.yaml]\n") {
			t.Errorf("%s: kustomization without the install YAML or the pushed image:\n%s", tc.base, k)
		}
		if kubectl == "" {
			continue
		}
		base, err := exec.Command(kubectl, "kustomize", RepoPath(tc.base)).Output()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v", tc.base, err)
		}
		install := strings.ReplaceAll(string(base), "localhost/sealion/pinniped-server:dev", released)
		if err := os.WriteFile(filepath.Join(dir, "install.yaml"), []byte(install), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v\n%s", tc.base, err, out)
		}
		if !strings.Contains(string(out), "image: "+pushedServer+"\n") || strings.Contains(string(out), "localhost/sealion/pinniped-server") {
			t.Errorf("%s renders without the pushed image, or still with the local one:\n%s", tc.base, out)
		}
	}

	if _, err := kustomization(t.TempDir(), "install.yaml", nil, pushed{ServerImage: "127.0.0.1:5000/x:dev"}); err == nil {
		t.Error("an image pushed without a digest was accepted")
	}
	// Without a push the kustomization is the file and the components.
	if k, _ := kustomization("/a", "install.yaml", []string{"/c/signer-secret"}, nil); k != "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [install.yaml]\ncomponents:\n- ../c/signer-secret\n" {
		t.Errorf("plain kustomization %q", k)
	}
}

// The matrix makes the previous release that PreviousReleaseDir names: its artifact must make the
// same version.
func TestPreviousReleaseIsTheMatrixArtifact(t *testing.T) {
	t.Parallel()
	catalog, err := os.ReadFile(RepoPath("matrix/catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "tools/previousrelease/previousrelease.sh, " + PreviousReleaseVersion + ","; !strings.Contains(string(catalog), want) {
		t.Errorf("matrix/catalog.yaml has no artifact command with %q: make the two agree", want)
	}
}
