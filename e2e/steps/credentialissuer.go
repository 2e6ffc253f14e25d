package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	configv1alpha1 "sealion.dev/core/apis/concierge/config/v1alpha1"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
)

// Files SaveCredentialIssuersTo writes in a cluster's log folder; the matrix runner reads them.
const (
	// CredentialIssuersFile is the CredentialIssuers at the end of a suite.
	CredentialIssuersFile = "credentialissuers.yaml"
	// CredentialIssuersCSREnabledFile is the CredentialIssuers while a test had the
	// CertificateSigningRequest strategy enabled: where the strategy does not serve, auto mode
	// lists no entry of it at the end.
	CredentialIssuersCSREnabledFile = "credentialissuers-certificatesigningrequest-enabled.yaml"
)

// SaveCredentialIssuers writes the CredentialIssuers, status included, to
// dir/<cluster name>/credentialissuers.yaml at the end of a suite: the strategy the Concierge
// chose is the first thing a conformance report shows.
func SaveCredentialIssuers(dir string) env.Func {
	return SaveCredentialIssuersTo(dir, CredentialIssuersFile)
}

// SaveCredentialIssuersTo writes the CredentialIssuers, status included, to
// dir/<cluster name>/file. Without a cluster or a dir it does nothing.
func SaveCredentialIssuersTo(dir, file string) env.Func {
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
		return ctx, os.WriteFile(filepath.Join(dir, file), []byte(out), 0o644)
	}
}

// WaitForStrategy waits until the Concierge's CredentialIssuer reports strategy typ successful,
// or any strategy when typ is empty, and returns it; the error shows the last status seen.
func WaitForStrategy(ctx context.Context, cfg *envconf.Config, typ configv1alpha1.StrategyType, timeout time.Duration) (configv1alpha1.CredentialIssuerStrategy, error) {
	var found configv1alpha1.CredentialIssuerStrategy
	client, err := conciergeclientset.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		return found, err
	}
	var last configv1alpha1.CredentialIssuerStatus
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		ci, err := client.ConfigV1alpha1().CredentialIssuers().Get(ctx, ClusterFrom(ctx).Installation.CredentialIssuer, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = ci.Status
		for _, s := range ci.Status.Strategies {
			if (typ == "" || s.Type == typ) && s.Status == configv1alpha1.StrategyStatusSuccess {
				found = s
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return found, fmt.Errorf("no successful strategy %q within %v; status %+v", typ, timeout, last)
	}
	return found, nil
}
