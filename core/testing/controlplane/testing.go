package controlplane

import (
	"context"
	"testing"
)

// StartForTest starts a control plane for an integration test and stops it in t.Cleanup.
// Under -short it skips the test; it fails (never skips) when the binaries are missing, so a
// broken setup cannot pass silently.
func StartForTest(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping: needs a real etcd and kube-apiserver, which -short excludes")
	}
	cp, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping control plane: %v", err)
		}
	})
	return cp
}
