package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

// SaveCredentialIssuers writes the CredentialIssuers, status included, to
// dir/<cluster name>/credentialissuers.yaml at the end of a suite: the strategy the Concierge
// chose is the first thing a conformance report shows (the matrix runner reads this file).
// Without a cluster or a dir it does nothing.
func SaveCredentialIssuers(dir string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		c := ClusterFrom(ctx)
		if c == nil || dir == "" {
			return ctx, nil
		}
		out, err := Kubectl(ctx, cfg.KubeconfigFile(), "", "get", "credentialissuers", "-o", "yaml")
		if err != nil {
			return ctx, fmt.Errorf("saving the CredentialIssuers: %w", err)
		}
		dir := filepath.Join(dir, c.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return ctx, err
		}
		return ctx, os.WriteFile(filepath.Join(dir, "credentialissuers.yaml"), []byte(out), 0o644)
	}
}
