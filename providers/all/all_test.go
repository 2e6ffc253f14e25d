package all

import (
	"strings"
	"testing"

	"sealion.dev/providers/existing"
)

func TestNew(t *testing.T) {
	for _, name := range Names {
		opts := Options{}
		if name == "existing" {
			opts.Existing = existing.Options{KubeconfigPath: "/nonexistent/kubeconfig"}
		}
		p, err := New(name, opts)
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if got := p.Info().Name; got != name {
			t.Errorf("New(%q).Info().Name = %q", name, got)
		}
	}
	if _, err := New("existing", Options{}); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("existing without a kubeconfig: %v", err)
	}
	if _, err := New("minikube", Options{}); err == nil || !strings.Contains(err.Error(), "kubeadm, gke") {
		t.Errorf("unknown provider: %v", err)
	}
}
